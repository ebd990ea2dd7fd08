"""The real Claude Code CLI, its hooks wired by ``snapshotter init claude-code``, then undo.

Opt-in: ``pytest -m realclient`` (the default run leaves these out). Needs the
``claude`` CLI (``npm install -g @anthropic-ai/claude-code``, or its path in
``SNAPSHOTTER_CLAUDE``) and ``unshare`` with ``ip`` (root, or user namespaces):
each ``claude -p`` runs in a network namespace with only loopback, against the
fake Messages API of ``fake_anthropic.py`` that scripts its Bash tool calls, in
a PID namespace of its own so no tool outlives the test. The hooks are the
real ones: ``snapshotter hook`` processes started by Claude Code.

``SNAPSHOTTER_RECORD_FIXTURES=1 pytest -m realclient -k records`` writes what
the client sent into ``fixtures/claude-code/`` (replayed by
``test_claude_code_recorded.py`` in the default run).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import cli_ok, files_of, listed, make_repo, run_cli
from test_claude_code_recorded import FIXTURE, PLACEHOLDERS, REPO

from snapshotter.logfile import log_path

pytestmark = pytest.mark.realclient

HERE = Path(__file__).parents[1]  # tests/: the fake APIs live beside builders.py
FAKE = HERE / "fake_anthropic.py"
VENV_BIN = Path(sys.executable).parent
SESSION = "5a9e0000-0000-4000-8000-00000000c1ad"
CLAUDE = os.environ.get("SNAPSHOTTER_CLAUDE") or shutil.which("claude")
# A network namespace with only loopback; a PID namespace so that the Bash
# tool's processes end with the driver (a SIGTERM or SIGKILL orphans them).
# Its own /proc too, where the driver sees which hooks are still running.
UNSHARE = [
    "unshare",
    "-n",
    "-p",
    "-f",
    "-m",
    "--mount-proc",
    *(["-r"] if os.geteuid() != 0 else []),
]
LO_UP = 'ip link set lo up && exec "$0" "$@"'
# No request but the agent's own: no telemetry, update checks, error reports.
QUIET = {
    "ANTHROPIC_API_KEY": "test",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


def _unshare_works() -> str | None:
    """Why the scenario cannot run here, or None."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs unshare and ip (util-linux, iproute2)"
    done = subprocess.run(
        [*UNSHARE, "sh", "-c", LO_UP, "true"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return f"unshare -n is not permitted here: {done.stderr.strip()}"
    return None


def claude_or_skip() -> str:
    """The claude CLI, where it can run offline here; else the test is skipped, saying why."""
    if CLAUDE is None:
        pytest.skip("the claude CLI is not installed (npm install -g @anthropic-ai/claude-code)")
    why = _unshare_works()
    if why is not None:
        pytest.skip(why)
    return CLAUDE


@pytest.fixture(scope="module")
def claude() -> str:
    return claude_or_skip()


def client_env(claude: str) -> dict[str, str]:
    """This test's environment (its HOME), with this venv's snapshotter first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    path = os.pathsep.join([str(VENV_BIN), str(Path(claude).parent), env.get("PATH", "")])
    return {**env, **QUIET, "PATH": path}


def wired_repo(tmp_path: Path, claude: str) -> Path:
    """A committed repository with the hooks of ``snapshotter init claude-code``."""
    root = make_repo(tmp_path / "repo", REPO)
    done = run_cli("init", "claude-code", cwd=root, env=client_env(claude))
    assert done.returncode == 0, f"init claude-code failed: {done.stderr}"
    settings = json.loads((root / ".claude" / "settings.json").read_text())
    commands = {
        h["command"] for groups in settings["hooks"].values() for g in groups for h in g["hooks"]
    }
    assert commands == {"snapshotter hook"}, f"init writes the plain command: {commands}"
    return root


def wrap_hooks(root: Path, log: Path) -> None:
    """Every hook's payload appended to ``log`` too, before ``snapshotter hook`` reads it."""
    path = root / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    tee = f"sh -c 'tee -a {shlex.quote(str(log))} | snapshotter hook'"
    for groups in settings["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                hook["command"] = tee
    path.write_text(json.dumps(settings, indent=2))


def drive(
    tmp_path: Path, claude: str, root: Path, script: dict[str, Any], runs: list[dict[str, Any]]
) -> dict[str, Any]:
    """Each run is ``claude -p PROMPT`` in ``root`` (the first starts the session, the
    rest resume it), against the fake API, all in one namespace; the driver's summary."""
    work = tmp_path / "client"
    work.mkdir(exist_ok=True)
    env = client_env(claude)
    spec_runs = []
    for index, run in enumerate(runs):
        session = ["--session-id" if index == 0 else "--resume", SESSION]
        # --allowedTools rather than --dangerously-skip-permissions: root may not use that.
        argv = [claude, "-p", run["prompt"], "--allowedTools", "Bash", *session]
        spec_runs.append({"argv": argv, "cwd": str(root), "env": env, "timeout": 90, **run})
    summary = run_fake(FAKE, work, script, spec_runs)
    return summary


def run_fake(
    fake: Path, work: Path, script: Any, runs: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    """Run a fake API's driver (``fake``: fake_anthropic.py, fake_openai.py...) on ``runs``
    of the client, in a network namespace with only loopback; the driver's summary."""
    spec = {
        "out": str(work / "summary.json"),
        "requests": str(work / "requests.jsonl"),
        "script": script,
        "runs": runs,
        **extra,
    }
    (work / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run(
        [*UNSHARE, "sh", "-c", LO_UP, sys.executable, str(fake), str(work / "spec.json")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"the driver failed: {done.stderr}"
    summary: dict[str, Any] = json.loads((work / "summary.json").read_text())
    print(f"\n[realclient] {summary['runs']}")
    return summary


def succeeded(summary: dict[str, Any], tmp_path: Path, client: str = "claude") -> None:
    codes = [r["returncode"] for r in summary["runs"]]
    err = (tmp_path / "client" / "summary.stderr").read_text(errors="replace")
    assert codes == [0] * len(codes), f"{client} exit codes {codes}; its stderr: {err}"


def no_hook_failures() -> None:
    """``snapshotter hook`` logged no failure (it exits 0 whatever happens: SPEC §6)."""
    log = log_path(Path(os.environ["SNAPSHOTTER_DATA_DIR"]))
    logged = log.read_text() if log.exists() else ""
    assert not logged.strip(), f"hook failures logged: {logged}"


# The answers of the fake API, by the key in the prompt.
G_TURN = {"turn-g": [{"bash": "printf 'g by the agent\\n' > g.txt"}, {"text": "Edited g."}]}
F_TURN = {
    "turn-f": [
        {"bash": "echo x > f.txt"},
        {"bash": "git checkout -- f.txt"},
        {"text": "f.txt is as it was."},
    ]
}
B_TURN = {"turn-b": [{"bash": "rm b.txt; sleep 30"}, {"text": "Removed b."}]}
PROMPTS = {
    "turn-g": "[turn-g] Edit g.txt",
    "turn-f": "[turn-f] Try a change to f.txt, then take it back",
    "turn-b": "[turn-b] Remove b.txt",
}


def test_undo_passes_the_turn_that_ended_where_it_began(tmp_path: Path, claude: str) -> None:
    """(a) Turn 1 edits g.txt; turn 2 changes f.txt and checks it out again; undo reverts turn 1."""
    root = wired_repo(tmp_path, claude)
    runs = [{"prompt": PROMPTS["turn-g"]}, {"prompt": PROMPTS["turn-f"]}]
    summary = drive(tmp_path, claude, root, {**G_TURN, **F_TURN}, runs)
    succeeded(summary, tmp_path)
    assert summary["served"] == [
        ["turn-g", 0],
        ["turn-g", 1],
        ["turn-f", 0],
        ["turn-f", 1],
        ["turn-f", 2],
    ]
    assert (root / "g.txt").read_bytes() == b"g by the agent\n", "the agent's Bash ran"

    cps = listed(root)
    turns = [cp for cp in cps if cp["kind"] == "turn"]
    assert [(t["prompt"], files_of(t)) for t in turns] == [
        (PROMPTS["turn-g"], {"g.txt": "modified"}),
        (PROMPTS["turn-f"], {}),
    ], f"two turns, the second with no net change: {cps}"
    f_turn = turns[1]
    tools = [cp for cp in cps if cp["parent"] == f_turn["id"]]
    assert [t["command"] for t in tools] == ["echo x > f.txt", "git checkout -- f.txt"], (
        f"the empty turn's two Bash tools are nested under it: {cps}"
    )
    assert all(t["tool_name"] == "Bash" for t in tools)

    out = cli_ok(root, "undo")
    assert f"undid checkpoint {turns[0]['id']}" in out, f"undo passes the empty turn: {out}"
    assert (root / "g.txt").read_bytes() == REPO["g.txt"].encode(), "g.txt is as committed"
    assert (root / "f.txt").read_bytes() == REPO["f.txt"].encode(), "f.txt is as committed"
    cli_ok(root, "redo")
    assert (root / "g.txt").read_bytes() == b"g by the agent\n", "redo puts the agent's g.txt back"
    assert (root / "f.txt").read_bytes() == REPO["f.txt"].encode()
    no_hook_failures()


@pytest.mark.parametrize("signal", ["SIGINT", "SIGKILL"])
def test_undo_after_the_client_is_stopped_mid_tool(
    tmp_path: Path, claude: str, hermetic: Path, signal: str
) -> None:
    """(b) The Bash tool removes b.txt and sleeps; the client is stopped while it sleeps.

    No PostToolUse and no Stop come. On SIGINT, Claude Code (2.1.197, -p) sends
    SessionEnd (reason "other") or exits 1 without it, depending on a race in
    the client: the open turn is then closed by SessionEnd, else the shell's
    ``undo`` closes it first, as after SIGKILL; either way as ``interrupted:``.
    Either way undo brings b.txt back.
    """
    root = wired_repo(tmp_path, claude)
    log = tmp_path / "hooks.jsonl"
    wrap_hooks(root, log)
    interrupt = {"gone": str(root / "b.txt"), "signal": signal, "after": 1.0}
    runs = [{"prompt": PROMPTS["turn-b"], "interrupt": interrupt}]
    summary = drive(tmp_path, claude, root, B_TURN, runs)
    assert summary["runs"][0]["note"] == f"sent {signal}", summary
    assert summary["runs"][0]["seconds"] < 25, "the client stopped before the tool's sleep ended"
    assert not (root / "b.txt").exists()
    names = [e["hook_event_name"] for e in read_payloads(log)]
    assert names[:3] == ["SessionStart", "UserPromptSubmit", "PreToolUse"], names
    assert names[3:] in ([], ["SessionEnd"]), f"no PostToolUse or Stop after {signal}: {names}"
    print(f"[realclient] {signal}: the client sent {names}")

    out = cli_ok(root, "undo")
    assert (root / "b.txt").read_bytes() == REPO["b.txt"].encode(), f"undo restores b.txt: {out}"
    (turn,) = listed(root)
    assert turn["reason"] == "interrupted", turn
    assert turn["label"] == f"interrupted: {PROMPTS['turn-b']}", (
        f"after {signal} and {names[-1]} the open turn is closed as interrupted: {turn}"
    )
    assert files_of(turn) == {"b.txt": "deleted"} and turn["undone"], turn
    cli_ok(root, "redo")
    assert not (root / "b.txt").exists(), "redo removes b.txt again"
    no_hook_failures()


def anonymised(payloads: list[dict[str, Any]], root: Path, home: Path) -> list[dict[str, Any]]:
    """The payloads with this run's paths replaced by the fixture's placeholders."""
    text = json.dumps(payloads)
    for placeholder, real in PLACEHOLDERS.items():
        text = text.replace(json.dumps(str(real(root, home)))[1:-1], placeholder)
    result: list[dict[str, Any]] = json.loads(text)
    return result


def read_payloads(log: Path) -> list[dict[str, Any]]:
    decoder, text, found, at = json.JSONDecoder(), log.read_text(), [], 0
    while (at := len(text) - len(text[at:].lstrip())) < len(text):
        obj, at = decoder.raw_decode(text, at)
        found.append(obj)
    return found


def shape(steps: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """What must not drift: each event's name and field names, in order, up to the
    interrupted tool (whether SessionEnd follows it is a race in the client)."""
    events = [s["event"] for s in steps if "event" in s]
    last_pre = max(i for i, e in enumerate(events) if e["hook_event_name"] == "PreToolUse")
    return [(e["hook_event_name"], sorted(e)) for e in events[: last_pre + 1]]


def as_steps(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events, each PreToolUse followed by what its Bash command did (the sleep left out)."""
    steps: list[dict[str, Any]] = []
    for event in payloads:
        steps.append({"event": event})
        if event["hook_event_name"] == "PreToolUse":
            steps.append({"shell": event["tool_input"]["command"].replace("; sleep 30", "")})
    return steps


def test_records_what_the_client_sends_to_the_hooks(
    tmp_path: Path, claude: str, hermetic: Path
) -> None:
    """(c) The payloads of a real session match the shape of the recorded fixture."""
    root = wired_repo(tmp_path, claude)
    log = tmp_path / "hooks.jsonl"
    wrap_hooks(root, log)
    runs: list[dict[str, Any]] = [
        {"prompt": PROMPTS["turn-g"]},
        {"prompt": PROMPTS["turn-f"]},
        {"prompt": PROMPTS["turn-b"], "interrupt": {"gone": str(root / "b.txt"), "after": 1.0}},
    ]
    drive(tmp_path, claude, root, {**G_TURN, **F_TURN, **B_TURN}, runs)
    steps = as_steps(anonymised(read_payloads(log), root, hermetic))
    ended = steps[-1].get("event", {}).get("hook_event_name") == "SessionEnd"
    if os.environ.get("SNAPSHOTTER_RECORD_FIXTURES") == "1":
        assert ended, "this time the client sent no SessionEnd after SIGINT; record again"
        version = subprocess.run([claude, "--version"], capture_output=True, text=True)
        recorded = {
            "client": version.stdout.strip(),
            "how": "claude -p, three prompts (--session-id, then --resume), SIGINT during the "
            "last Bash tool; fake Messages API; hooks from snapshotter init claude-code",
            "repo": REPO,
            "steps": steps,
        }
        FIXTURE.write_text(json.dumps(recorded, indent=1) + "\n")
    stored = json.loads(FIXTURE.read_text())
    assert shape(steps) == shape(stored["steps"]), (
        f"Claude Code now sends other events or fields than {FIXTURE.name} holds "
        f"(recorded from {stored['client']}); re-record with SNAPSHOTTER_RECORD_FIXTURES=1"
    )
