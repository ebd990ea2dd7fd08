"""Every recorded session, replayed in-process and through `snapshotter hook` (SPEC §4, §6).

The in-process path is what a Python runtime does (Registry + register_snapshot +
Executor.dispatch, the builtin wired on all six events, tool events via matcher
"*"); the subprocess path is what docker-agent or Claude Code does (one fresh
`snapshotter hook` process per event). Both must record exactly the fixture's
"expect", and exactly the same checkpoints as each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import run_hook, worktree_entries

from snapshotter.cli import replay
from snapshotter.hooks.builtin import register_snapshot
from snapshotter.hooks.events import SNAPSHOT_EVENTS, TOOL_EVENTS
from snapshotter.hooks.registry import Executor, HooksConfig, Registry
from snapshotter.hooks.wire import HookInput
from snapshotter.logfile import log_path
from snapshotter.models import Checkpoint

# Hooks run as a runtime runs them by default: each event's `snapshotter hook`
# process hands it to the hook server (hooks/server.py), which also runs the
# commands; the rest of the suite covers hooks that handle their event alone.
pytestmark = pytest.mark.usefixtures("server_socket")

SESSIONS = replay.session_names()

COMPARED = {
    "id",
    "session_id",
    "kind",
    "label",
    "parent",
    "files",
    "skipped",
    "undone",
    "before",
    "after",
}
BUILTIN = [{"type": "builtin", "command": "snapshot"}]
CONFIG: dict[str, Any] = {
    event: ([{"matcher": "*", "hooks": BUILTIN}] if event in TOOL_EVENTS else BUILTIN)
    for event in SNAPSHOT_EVENTS
}


def comparable(cps: list[Checkpoint]) -> list[dict[str, Any]]:
    return [cp.model_dump(include=COMPARED) for cp in cps]


def all_checkpoints(root: Path, data_dir: Path) -> list[Checkpoint]:
    controller = register_snapshot(Registry(), data_dir_path=data_dir)
    return controller.list(root, all_sessions=True)


def replay_in_process(name: str, base: Path) -> tuple[Path, list[Checkpoint]]:
    session = replay.load_session(name)
    root = replay.build_repo(base / "repo", replay.load_recipe(session["repo"]))
    data_dir = base / "data"
    registry = Registry()
    controller = register_snapshot(registry, data_dir_path=data_dir)
    executor = Executor(HooksConfig.parse(CONFIG), registry)

    def send(event: dict[str, Any]) -> None:
        hook_input = HookInput.model_validate(event)
        result = executor.dispatch(hook_input.event, hook_input)
        assert result.allowed, f"{name}: the builtin blocked {event}"
        assert result.exit_code == 0, f"{name}: {event} failed: {result.stderr}"

    replay.replay(session, root, send)
    assert not log_path(data_dir).exists(), (
        f"{name}: in-process replay logged failures: {log_path(data_dir).read_text()}"
    )
    return root, controller.list(root, all_sessions=True)


def replay_subprocess(name: str, base: Path) -> dict[str, Any]:
    """One `snapshotter hook` process per event, with the resident hook server on
    (as users run it): the test's private HOME and runtime dir, its server
    stopped after the test (``conftest.hermetic``)."""
    session = replay.load_session(name)
    root = replay.build_repo(base / "repo", replay.load_recipe(session["repo"]))
    data_dir = base / "data"
    problems: list[str] = []

    def send(event: dict[str, Any]) -> None:
        done = run_hook(event, data_dir, env={"SNAPSHOTTER_HOOK_SERVER": "1"})
        out = done.stdout.decode(errors="replace").strip()
        err = done.stderr.decode(errors="replace")
        if done.returncode != 0 or out not in ("", "{}") or err:
            problems.append(
                f"{event.get('hook_event_name')}: exit {done.returncode}, "
                f"stdout {out!r}, stderr {err!r}"
            )

    replay.replay(session, root, send)
    log = log_path(data_dir)
    return {
        "root": root,
        "data_dir": data_dir,
        "problems": problems,
        "log": log.read_text() if log.exists() else "",
    }


def test_fixtures_cover_the_shapes_the_issue_names() -> None:
    """Guard the recordings themselves: the shapes below must stay covered."""
    shapes = {replay.load_session(n)["shape"] for n in SESSIONS}
    assert {"docker-agent", "claude-code"} <= shapes, f"missing a runtime shape: {shapes}"
    events = [s["event"] for n in SESSIONS for s in replay.load_session(n)["steps"] if "event" in s]
    reasons = {e.get("reason") for e in events if e["hook_event_name"] == "turn_end"}
    assert {"error", "canceled"} <= reasons, f"turn_end reasons covered: {reasons}"
    pres = {e.get("tool_use_id") for e in events if e["hook_event_name"] == "pre_tool_use"}
    orphans = [
        e
        for e in events
        if e["hook_event_name"] == "post_tool_use" and e.get("tool_use_id") not in pres
    ]
    assert orphans, "no post_tool_use without its pre_tool_use in the fixtures"


@pytest.mark.parametrize("name", SESSIONS)
def test_in_process_replay_matches_expect(name: str, tmp_path: Path) -> None:
    session = replay.load_session(name)
    _, cps = replay_in_process(name, tmp_path)
    expect = session["expect"]
    got = [
        {
            "kind": cp.kind,
            "label": cp.label,
            "parent": cp.parent,
            "files": {f.path: f.status for f in cp.files},
        }
        for cp in cps
    ]
    assert got == expect, f"{name}: recorded checkpoints differ from the fixture's expect"
    assert [cp.id for cp in cps] == list(range(1, len(expect) + 1)), f"{name}: ids not 1..n"
    session_ids = {s["event"]["session_id"] for s in session["steps"] if "event" in s}
    for cp in cps:
        assert cp.session_id in session_ids, f"{name}: checkpoint {cp.id} has a foreign session"
        assert not cp.skipped, f"{name}: checkpoint {cp.id} skipped {cp.skipped}"
        assert not cp.undone, f"{name}: checkpoint {cp.id} is undone after a plain replay"


@pytest.mark.parametrize("name", SESSIONS)
def test_subprocess_replay_equals_in_process(name: str, tmp_path: Path) -> None:
    sub = replay_subprocess(name, tmp_path / "sub")
    assert not sub["problems"], f"{name}: `snapshotter hook` misbehaved: {sub['problems']}"
    assert not sub["log"], f"{name}: `snapshotter hook` logged failures: {sub['log']}"
    from_hooks = all_checkpoints(sub["root"], sub["data_dir"])
    _, in_process = replay_in_process(name, tmp_path)
    assert comparable(from_hooks) == comparable(in_process), (
        f"{name}: one process per event recorded different checkpoints than the in-memory builtin"
    )
    expect = replay.load_session(name)["expect"]
    got = [
        {
            "kind": cp.kind,
            "label": cp.label,
            "parent": cp.parent,
            "files": {f.path: f.status for f in cp.files},
        }
        for cp in from_hooks
    ]
    assert got == expect, f"{name}: subprocess replay differs from the fixture's expect"


@pytest.mark.parametrize("name", SESSIONS)
def test_reset_to_original_after_replay_restores_the_recipe(name: str, tmp_path: Path) -> None:
    """Undo everything a recorded session did: the worktree is the recipe again, byte for byte."""
    session = replay.load_session(name)
    recipe = replay.load_recipe(session["repo"])
    pristine = replay.build_repo(tmp_path / "pristine", recipe)
    root, cps = replay_in_process(name, tmp_path)
    controller = register_snapshot(Registry(), data_dir_path=tmp_path / "data")
    for session_id in sorted({cp.session_id for cp in cps}):
        report = controller.reset(root, None, session_id)
        assert report.checkpoint, f"{name}: reset --original reverted nothing"
    assert worktree_entries(root) == worktree_entries(pristine), (
        f"{name}: reset to original did not bring back the recipe's files"
    )
    assert all(cp.undone for cp in controller.list(root, all_sessions=True)), (
        f"{name}: checkpoints not marked undone after reset --original"
    )


def send_all(
    tmp_path: Path, root: Path, steps: list[dict[str, Any] | tuple[str, str]]
) -> list[Checkpoint]:
    """In-process: events (dicts) and ("write", path) edits, in order."""
    registry = Registry()
    controller = register_snapshot(registry, data_dir_path=tmp_path / "data")
    executor = Executor(HooksConfig.parse(CONFIG), registry)
    for step in steps:
        if isinstance(step, tuple):
            (root / step[1]).write_text(f"{step[1]} changed\n")
            continue
        hook_input = HookInput.model_validate({**step, "cwd": str(root)})
        result = executor.dispatch(hook_input.event, hook_input)
        assert result.exit_code == 0, f"{step}: {result.stderr}"
    return controller.list(root, all_sessions=True)


def test_claude_code_posts_without_ids_pair_first_in_first_out(tmp_path: Path) -> None:
    root = replay.build_repo(tmp_path / "repo", replay.load_recipe("small_app"))
    ev = {"session_id": "cc", "tool_name": "Edit"}
    cps = send_all(
        tmp_path,
        root,
        [
            {**ev, "hook_event_name": "PreToolUse"},
            ("write", "README.md"),
            {**ev, "hook_event_name": "PreToolUse"},
            {**ev, "hook_event_name": "PostToolUse"},  # the first Edit finished
            ("write", "src/config.py"),
            {**ev, "hook_event_name": "PostToolUse"},
        ],
    )
    assert [[f.path for f in cp.files] for cp in cps] == [["README.md"], ["src/config.py"]], (
        f"posts must pair with the oldest unpaired pre of the same tool: {cps}"
    )


def test_session_end_closes_a_turn_the_runtime_never_ended(tmp_path: Path) -> None:
    root = replay.build_repo(tmp_path / "repo", replay.load_recipe("small_app"))
    cps = send_all(
        tmp_path,
        root,
        [
            {"session_id": "s", "hook_event_name": "turn_start"},
            {
                "session_id": "s",
                "hook_event_name": "pre_tool_use",
                "tool_name": "shell",
                "tool_use_id": "never-posted",
            },
            ("write", "README.md"),
            {"session_id": "s", "hook_event_name": "session_end", "reason": "exit"},
        ],
    )
    assert [(cp.kind, cp.label, [f.path for f in cp.files]) for cp in cps] == [
        ("turn", "interrupted", ["README.md"])
    ], f"an open turn's change must be recorded at session_end, as interrupted: {cps}"
