"""The hook Registry and Executor a Python runtime adopts (SPEC §8, docker-agent semantics)."""

from __future__ import annotations

import json
import logging
import os
import shlex
from pathlib import Path
from typing import Any

import pytest
from builders import argv, write

from snapshotter.hooks import events as ev
from snapshotter.hooks.builtin import AUTO_EVENTS, BUILTIN_NAME, register_snapshot
from snapshotter.hooks.registry import Executor, HookDefinition, HooksConfig, Registry
from snapshotter.hooks.wire import HookInput, HookOutput


def script(tmp_path: Path, name: str, body: str) -> str:
    """A small shell script; returns the command that runs it."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    os.chmod(path, 0o755)
    return shlex.quote(str(path))


def tool_input(tool: str = "write_file", **extra: Any) -> HookInput:
    return HookInput(
        session_id="s1", cwd=os.getcwd(), tool_name=tool, tool_use_id="call-1", **extra
    )


class Calls:
    """A builtin that remembers what it was called with."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, list[str]]] = []

    def __call__(self, hook_input: HookInput, args: list[str]) -> HookOutput | None:
        self.seen.append((hook_input.event, hook_input.tool_name, args))
        return None


def test_command_hook_gets_the_event_as_json_on_stdin(tmp_path: Path) -> None:
    out = tmp_path / "stdin.json"
    cmd = script(tmp_path, "cat.sh", f"cat > {shlex.quote(str(out))}\n")
    config = HooksConfig.parse({"pre_tool_use": [{"matcher": "*", "hooks": [{"command": cmd}]}]})
    result = Executor(config, Registry()).dispatch(
        ev.PRE_TOOL_USE, tool_input(tool_input={"path": "a.txt"})
    )
    assert result.allowed and result.exit_code == 0, f"a quiet hook allows: {result}"
    data = json.loads(out.read_text())
    assert data["hook_event_name"] == "pre_tool_use", f"event name on stdin: {data}"
    assert data["session_id"] == "s1" and data["tool_name"] == "write_file", data
    assert data["tool_use_id"] == "call-1" and data["tool_input"] == {"path": "a.txt"}, data


def test_exit_2_blocks_and_its_stderr_is_the_reason(tmp_path: Path) -> None:
    cmd = script(tmp_path, "block.sh", "echo 'not this file' >&2\nexit 2\n")
    config = HooksConfig.parse({"pre_tool_use": [{"hooks": [{"command": cmd}]}]})
    result = Executor(config, Registry()).dispatch(ev.PRE_TOOL_USE, tool_input())
    assert result.allowed is False, "exit 2 must block"
    assert result.exit_code == 2, f"exit code kept: {result.exit_code}"
    assert "not this file" in result.message, f"the block reason: {result.message!r}"


def test_other_failures_are_logged_and_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    marker = tmp_path / "second-ran"
    failing = script(tmp_path, "fail.sh", "echo 'broken hook' >&2\nexit 1\n")
    second = script(tmp_path, "ok.sh", f"touch {shlex.quote(str(marker))}\n")
    config = HooksConfig.parse({"session_start": [{"command": failing}, {"command": second}]})
    with caplog.at_level(logging.WARNING, logger="snapshotter.hooks"):
        result = Executor(config, Registry()).dispatch(ev.SESSION_START, tool_input())
    assert result.allowed is True, "a non-2 failure must not block"
    assert result.exit_code == 1, f"the failure is reported in the result: {result}"
    assert "broken hook" in caplog.text, f"the failure is logged: {caplog.text!r}"
    assert marker.exists(), "hooks after a failing one still run"


def test_command_hook_timeout(tmp_path: Path) -> None:
    cmd = script(tmp_path, "slow.sh", "exec sleep 30\n")
    config = HooksConfig.parse({"turn_end": [{"command": cmd, "timeout": 1}]})
    result = Executor(config, Registry()).dispatch(ev.TURN_END, tool_input())
    assert result.allowed is True, "a timed-out hook does not block"
    assert result.exit_code != 0 and "timed out" in result.stderr, f"timeout reported: {result}"


def test_command_hook_json_output_is_honoured(tmp_path: Path) -> None:
    answer = '{"decision": "block", "reason": "policy", "system_message": "hi"}'
    blocker = script(tmp_path, "json.sh", f"echo '{answer}'\n")
    context = script(tmp_path, "ctx.sh", "echo 'plain text becomes context'\n")
    config = HooksConfig.parse({"turn_start": [{"command": context}, {"command": blocker}]})
    result = Executor(config, Registry()).dispatch(ev.TURN_START, tool_input())
    assert result.allowed is False and result.message == "policy", f"JSON block: {result}"
    assert result.system_message == "hi", f"system message: {result.system_message!r}"
    assert result.additional_context == "plain text becomes context", result


def test_matcher_regex_selects_by_tool_name() -> None:
    registry = Registry()
    writes, shells, every = Calls(), Calls(), Calls()
    registry.register_builtin("writes", writes)
    registry.register_builtin("shells", shells)
    registry.register_builtin("every", every)
    config = HooksConfig.parse(
        {
            "pre_tool_use": [
                {
                    "matcher": "write_.*|edit_file",
                    "hooks": [{"type": "builtin", "command": "writes"}],
                },
                {"matcher": "shell", "hooks": [{"type": "builtin", "command": "shells"}]},
                {"matcher": "*", "hooks": [{"type": "builtin", "command": "every"}]},
                {"matcher": "(", "hooks": [{"type": "builtin", "command": "every"}]},  # bad regex
            ],
        }
    )
    executor = Executor(config, registry)
    for tool in ("write_file", "edit_file", "shell", "read_file", "shell_exec", "rewrite_file"):
        result = executor.dispatch(ev.PRE_TOOL_USE, tool_input(tool))
        assert result.allowed and result.exit_code == 0, f"{tool}: {result}"
    assert [t for _, t, _ in writes.seen] == ["write_file", "edit_file"], (
        f"regex matches the whole tool name: {writes.seen}"
    )
    assert [t for _, t, _ in shells.seen] == ["shell"], (
        f"'shell' must not match 'shell_exec': {shells.seen}"
    )
    assert len(every.seen) == 6, f"'*' matches every tool, a bad regex none: {every.seen}"
    assert executor.dispatch(ev.POST_TOOL_USE, tool_input()).outputs == [], "no post hooks"


def test_builtin_args_output_and_failures() -> None:
    registry = Registry()
    calls = Calls()
    registry.register_builtin("calls", calls)
    registry.register_builtin("blocker", lambda i, a: HookOutput(decision="block", reason="no"))

    def broken(hook_input: HookInput, args: list[str]) -> HookOutput | None:
        raise RuntimeError("builtin bug")

    registry.register_builtin("broken", broken)
    config = HooksConfig.parse(
        {
            "session_start": [
                {"type": "builtin", "command": "broken"},
                {"type": "builtin", "command": "missing"},
                {"type": "builtin", "command": "calls", "args": ["k=v"]},
            ],
            "turn_start": [{"type": "builtin", "command": "blocker"}],
        }
    )
    executor = Executor(config, registry, working_dir="/work/dir")
    result = executor.dispatch(ev.SESSION_START, HookInput(session_id="s"))
    assert result.allowed and result.exit_code == 1, f"a broken builtin is ignored: {result}"
    assert "builtin bug" in result.stderr and "missing" in result.stderr, result.stderr
    assert calls.seen == [("session_start", "", ["k=v"])], f"args reach the builtin: {calls.seen}"
    assert executor.dispatch(ev.TURN_START, HookInput(session_id="s")).allowed is False, (
        "a builtin's block output blocks"
    )


def test_executor_fills_cwd_from_its_working_dir() -> None:
    registry = Registry()
    seen: list[str] = []
    registry.register_builtin("cwd", lambda i, a: seen.append(i.cwd))
    config = HooksConfig.parse({"turn_start": [{"type": "builtin", "command": "cwd"}]})
    Executor(config, registry, working_dir="/w").dispatch(ev.TURN_START, HookInput())
    Executor(config, registry, working_dir="/w").dispatch(ev.TURN_START, HookInput(cwd="/own"))
    assert seen == ["/w", "/own"], f"cwd defaults to the executor's working dir: {seen}"


def _snapshot_hooks(config: HooksConfig, event: str) -> list[HookDefinition]:
    return [h for h in config.hooks_for(event) if h.type == "builtin" and h.command == BUILTIN_NAME]


def test_auto_inject_adds_the_builtin_once_per_event(data_dir: Path) -> None:
    registry = Registry()
    controller = register_snapshot(registry, data_dir_path=data_dir)
    assert BUILTIN_NAME in registry.names(), "register_snapshot registers 'snapshot'"
    assert set(AUTO_EVENTS) == {
        ev.SESSION_START,
        ev.USER_PROMPT_SUBMIT,
        ev.TURN_START,
        ev.TURN_END,
        ev.SESSION_END,
    }

    user = {
        "session_start": [{"command": "echo first"}, {"type": "builtin", "command": "snapshot"}],
        "turn_end": [{"command": "echo mine"}],
        "pre_tool_use": [{"matcher": "shell", "hooks": [{"command": "echo tool"}]}],
    }
    for raw in (None, {}, user, HooksConfig.parse(user)):
        once = controller.auto_inject(raw)
        twice = controller.auto_inject(once)
        for config in (once, twice):
            for event in AUTO_EVENTS:
                assert len(_snapshot_hooks(config, event)) == 1, (
                    f"{event}: the builtin must be present exactly once, got "
                    f"{config.hooks_for(event)}"
                )
            for event in (ev.PRE_TOOL_USE, ev.POST_TOOL_USE):
                assert not _snapshot_hooks(config, event), "auto_inject leaves tool events alone"
    injected = controller.auto_inject(user)
    assert [h.command for h in injected.hooks_for(ev.SESSION_START)] == ["echo first", "snapshot"]
    assert [h.command for h in injected.hooks_for(ev.TURN_END)] == ["echo mine", "snapshot"], (
        "the user's hooks keep their place, the builtin is appended"
    )
    assert [h.command for h in injected.hooks_for(ev.PRE_TOOL_USE, "shell")] == ["echo tool"]

    disabled = register_snapshot(Registry(), enabled=False, data_dir_path=data_dir)
    assert not any(_snapshot_hooks(disabled.auto_inject(None), e) for e in AUTO_EVENTS), (
        "a disabled builtin injects nothing"
    )


def test_auto_injected_builtin_records_turns(repo: Path, data_dir: Path) -> None:
    registry = Registry()
    controller = register_snapshot(registry, data_dir_path=data_dir)
    executor = Executor(controller.auto_inject(None), registry, working_dir=str(repo))
    executor.dispatch(ev.SESSION_START, HookInput(session_id="s"))
    executor.dispatch(ev.TURN_START, HookInput(session_id="s"))
    write(repo, "src/app.py", "print('changed')\n")
    executor.dispatch(ev.TURN_END, HookInput(session_id="s", reason="normal"))
    cps = controller.list(repo)
    assert [(cp.kind, cp.label, [f.path for f in cp.files]) for cp in cps] == [
        ("turn", "normal", ["src/app.py"])
    ], f"the auto-injected builtin records the turn: {cps}"
    controller.undo_last(repo)
    assert (repo / "src/app.py").read_text() == "print('hi')\n", "and the controller undoes it"


def test_snapshotter_hook_as_a_command_hook(repo: Path, data_dir: Path) -> None:
    """docker-agent's way: the executor runs `snapshotter hook` with the event on stdin."""
    cmd = shlex.join(argv(data_dir, "hook"))
    hooks = [{"command": cmd}]
    config = HooksConfig.parse(
        {
            "pre_tool_use": [{"matcher": "*", "hooks": hooks}],
            "post_tool_use": [{"matcher": "*", "hooks": hooks}],
        }
    )
    executor = Executor(config, Registry(), working_dir=str(repo))
    call = HookInput(session_id="s", tool_name="write_file", tool_use_id="c1")
    assert executor.dispatch(ev.PRE_TOOL_USE, call).allowed, "pre must never block"
    write(repo, "new.txt", "new\n")
    result = executor.dispatch(ev.POST_TOOL_USE, call)
    assert result.allowed and result.exit_code == 0 and not result.outputs, f"post: {result}"
    cps = register_snapshot(Registry(), data_dir_path=data_dir).list(repo)
    assert [(cp.label, [f.path for f in cp.files]) for cp in cps] == [("write_file", ["new.txt"])]
