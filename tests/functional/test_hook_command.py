"""`snapshotter hook` with hostile input: exit 0, no traceback, nothing written (SPEC §6).

The point is the process boundary (exit code, stdout, stderr): with
``pytest -m slow`` each bad input is one real process; by default the cases
that depend on the process itself are, and the rest go in-process through
``command.run``, the function the process runs. Processes run side by side.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from builders import fast_and_full, hook_in_process, run_hook, write

from snapshotter.hooks.builtin import SnapshotBuiltin
from snapshotter.hooks.wire import HookInput
from snapshotter.logfile import log_path

BIG = 5 * 1024 * 1024


def send_in_process(data_dir: Path, **fields: Any) -> None:
    SnapshotBuiltin(data_dir_path=data_dir).handle(HookInput(**fields), [])


def store_files(data_dir: Path) -> dict[str, bytes]:
    """state.json of every store, plus the list of store directories."""
    base = data_dir / "snapshot"
    found = {str(p.relative_to(base)): b"" for p in base.iterdir() if p.is_dir()}
    for state in base.glob("*/state.json"):
        found[str(state.relative_to(base))] = state.read_bytes()
    return found


@pytest.fixture
def recorded(repo: Path, data_dir: Path) -> Path:
    """A store with a checkpoint and an open turn and tool (so pending state exists too)."""
    common = {"session_id": "s1", "cwd": str(repo)}
    send_in_process(data_dir, hook_event_name="session_start", **common)
    send_in_process(data_dir, hook_event_name="turn_start", **common)
    write(repo, "src/app.py", "print('agent')\n")
    send_in_process(data_dir, hook_event_name="turn_end", reason="normal", **common)
    send_in_process(data_dir, hook_event_name="turn_start", **common)
    send_in_process(
        data_dir, hook_event_name="pre_tool_use", tool_name="shell", tool_use_id="open-1", **common
    )
    write(repo, "src/app.py", "print('pending edit')\n")
    return repo


def bad_inputs(repo: Path, elsewhere: Path) -> dict[str, bytes]:
    cwd = str(repo)

    def js(obj: Any) -> bytes:
        return json.dumps(obj).encode()

    ok = {"session_id": "s1", "cwd": cwd, "hook_event_name": "turn_end", "reason": "normal"}
    deep = "[" * 200_000 + "]" * 200_000
    return {
        "not json": b"this is not json {",
        "truncated json": js(ok)[:-5],
        "empty stdin": b"",
        "json array": js([ok]),
        "json string": js("turn_end"),
        "json null": b"null",
        "invalid utf-8": b'{"session_id": "\xff\xfe", "cwd": "' + cwd.encode() + b'"}',
        "session_id is a number": js({**ok, "session_id": 5}),
        "cwd is a list": js({**ok, "cwd": [cwd]}),
        "event name is an object": js({**ok, "hook_event_name": {"x": 1}}),
        "tool_input is a string": js(
            {**ok, "hook_event_name": "post_tool_use", "tool_input": "rm -rf /"}
        ),
        "missing cwd": js({k: v for k, v in ok.items() if k != "cwd"}),
        "missing session_id": js({k: v for k, v in ok.items() if k != "session_id"}),
        "empty session_id": js({**ok, "session_id": ""}),
        "unknown event": js({**ok, "hook_event_name": "before_llm_call"}),
        "unknown claude event": js({**ok, "hook_event_name": "Notification"}),
        "no event name": js({k: v for k, v in ok.items() if k != "hook_event_name"}),
        # A new session: s1's scope is the repository, whatever its later events say.
        "cwd outside any git repo": js({**ok, "session_id": "s2", "cwd": str(elsewhere)}),
        "cwd does not exist": js(
            {**ok, "session_id": "s3", "cwd": str(elsewhere / "missing" / "dir")}
        ),
        "5 MB field, wrong type": js({**ok, "session_id": 5, "last_user_message": "x" * BIG}),
        "5 MB field, unknown event": js(
            {**ok, "hook_event_name": "on_user_input", "prompt": "y" * BIG}
        ),
        "5 MB of garbage": b"\x00\x01garbage" * (BIG // 9),
        "deeply nested json": b'{"session_id": "s1", "tool_input": ' + deep.encode() + b"}",
    }


# Cases that depend on the process itself (its stdin, a fresh interpreter's
# recursion limit, a 5 MB read): real processes in every run. The rest run
# in-process through the same function by default, as processes in the full run.
AS_PROCESS = ("not json", "empty stdin", "invalid utf-8", "deeply nested json", "5 MB of garbage")


def as_process(raw: bytes, data_dir: Path) -> tuple[int, str, str]:
    done = run_hook(raw, data_dir)
    return (
        done.returncode,
        done.stdout.decode(errors="replace"),
        done.stderr.decode(errors="replace"),
    )


@pytest.mark.parametrize("every_case_a_process", fast_and_full(False, True))
def test_bad_input_is_a_quiet_no_op(
    recorded: Path, data_dir: Path, tmp_path: Path, every_case_a_process: bool
) -> None:
    elsewhere = tmp_path / "not-a-repo"
    elsewhere.mkdir()
    cases = bad_inputs(recorded, elsewhere)
    assert set(AS_PROCESS) <= set(cases)
    before = store_files(data_dir)
    worktree = (recorded / "src/app.py").read_bytes()

    processes = {n: raw for n, raw in cases.items() if every_case_a_process or n in AS_PROCESS}
    with ThreadPoolExecutor(max_workers=4) as pool:
        done = dict(
            zip(
                processes,
                pool.map(lambda p: as_process(p, data_dir), processes.values()),
                strict=True,
            )
        )
    for name, raw in cases.items():  # in this process: one at a time (stdout is redirected)
        if name not in processes:
            done[name] = hook_in_process(raw, data_dir)
    problems = []
    for name, (code, out, err) in done.items():
        out = out.strip()
        if code != 0:
            problems.append(f"{name}: exit {code}")
        if "Traceback" in err:
            problems.append(f"{name}: traceback on stderr: {err[-2000:]}")
        if out not in ("", "{}"):
            problems.append(f"{name}: stdout {out[:200]!r}")
        if len(err) > 10_000:
            problems.append(f"{name}: {len(err)} bytes of stderr")
    assert not problems, "bad input must exit 0 quietly:\n" + "\n".join(problems)
    assert store_files(data_dir) == before, "bad input changed the store's state (or made a store)"
    assert (recorded / "src/app.py").read_bytes() == worktree, "bad input touched the worktree"
    assert not (elsewhere / ".git").exists(), "a hook outside git must not create a repository"
    log = log_path(data_dir).read_text() if log_path(data_dir).exists() else ""
    for name in ("not json", "json array", "session_id is a number", "missing cwd"):
        assert not done[name][2].strip(), f"{name}: said in hook.log only (#26.6): {done[name]}"
    assert len(log.splitlines()) >= 4, f"bad input must be logged to hook.log; log: {log!r}"
    assert "not JSON" in log, log


def test_store_still_works_after_bad_input(recorded: Path, data_dir: Path) -> None:
    """The pending tool survives garbage; its post still records the checkpoint."""
    assert run_hook(b"{garbage", data_dir).returncode == 0, "garbage exits 0"
    post = {
        "session_id": "s1",
        "cwd": str(recorded),
        "hook_event_name": "post_tool_use",
        "tool_name": "shell",
        "tool_use_id": "open-1",
        "tool_response": "z" * BIG,
    }
    proc = run_hook(post, data_dir)
    assert proc.returncode == 0 and not proc.stderr, f"valid post failed: {proc.stderr!r}"
    state = json.loads(next((data_dir / "snapshot").glob("*/state.json")).read_bytes())
    tools = [cp for cp in state["checkpoints"] if cp["kind"] == "tool"]
    assert [(cp["label"], [f["path"] for f in cp["files"]]) for cp in tools] == [
        ("shell", ["src/app.py"])
    ], f"the post after bad input must pair with its pre: {state['checkpoints']}"


def test_internal_failure_is_logged_not_raised(recorded: Path, data_dir: Path) -> None:
    """A damaged store: exit 0, one line on stderr, a log entry, the damage left for a human."""
    state = next((data_dir / "snapshot").glob("*/state.json"))
    state.write_bytes(b'{"version": 1, "checkpoints": "damaged')
    event = {
        "session_id": "s1",
        "cwd": str(recorded),
        "hook_event_name": "pre_tool_use",
        "tool_name": "shell",
        "tool_use_id": "t9",
    }
    proc = run_hook(event, data_dir)
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, f"an internal failure must not fail the hook: {err}"
    assert "Traceback" not in err, f"no traceback on stderr: {err}"
    assert "state.json" in err, f"stderr should say what failed: {err!r}"
    assert "state.json" in log_path(data_dir).read_text(), "the failure goes to hook.log too"
    assert state.read_bytes() == b'{"version": 1, "checkpoints": "damaged', (
        "a damaged state file must not be overwritten"
    )


def test_lone_surrogate_session_id_still_pairs_its_events(recorded: Path, data_dir: Path) -> None:
    """Valid JSON that is not valid Unicode ("\\ud800"): the turn still records."""

    def raw(event: str) -> bytes:
        return (
            b'{"session_id": "odd\\ud800", "cwd": "'
            + str(recorded).encode()
            + b'", "hook_event_name": "'
            + event.encode()
            + b'"}'
        )

    proc = run_hook(raw("turn_start"), data_dir)
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0 and not err, f"exit {proc.returncode}: {err}"
    write(recorded, "odd.txt", "odd\n")
    turn_end = HookInput.model_validate(json.loads(raw("turn_end")))  # as `hook` parses it
    SnapshotBuiltin(data_dir_path=data_dir).handle(turn_end, [])
    state = json.loads(next((data_dir / "snapshot").glob("*/state.json")).read_bytes())
    odd = [cp for cp in state["checkpoints"] if cp["session_id"].startswith("odd")]
    assert [[f["path"] for f in cp["files"]] for cp in odd] == [["odd.txt"]], (
        f"turn_start and turn_end of one odd session id must pair: {state['checkpoints']}"
    )
