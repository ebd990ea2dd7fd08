"""The real Gemini CLI, its hooks wired by ``snapshotter init gemini``, then undo, offline.

Opt-in: ``pytest -m realclient`` (the default run leaves these out). Needs the
``gemini`` CLI (``npm install --prefix DIR @google/gemini-cli``, then its
``DIR/node_modules/.bin/gemini`` in ``SNAPSHOTTER_GEMINI`` or on PATH) and
``unshare`` with ``ip``. As in ``test_realclient_claude.py``: each
``gemini -p`` runs in a network namespace with only loopback and a PID
namespace of its own, against the fake Gemini API of ``fake_gemini.py``
(``GOOGLE_GEMINI_BASE_URL``), which scripts its ``run_shell_command``,
``write_file`` and ``replace`` calls. Every hook's payload is appended to a log
by a ``tee`` in front of the command ``snapshotter init gemini`` wrote. The
hooks are the real ones: ``snapshotter hook`` processes started by Gemini CLI,
on the six events init wires (SessionStart, BeforeAgent, BeforeTool,
AfterTool, AfterAgent, SessionEnd); then ``undo``, ``redo`` and ``reset``
must give back the bytes.

``SNAPSHOTTER_RECORD_FIXTURES=1 pytest -m realclient -k gemini`` writes what
the client sent into ``fixtures/sessions/gemini/`` (see its README.md;
replayed by ``test_gemini_recorded.py`` in the default run).
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
from test_claude_code_recorded import REPO
from test_realclient_claude import (
    _unshare_works,
    anonymised,
    no_hook_failures,
    read_payloads,
    run_fake,
    succeeded,
)

pytestmark = pytest.mark.realclient

HERE = Path(__file__).parents[1]  # tests/: the fake APIs live beside builders.py
FAKE = HERE / "fake_gemini.py"
FIXTURES = HERE.parent / "fixtures" / "sessions" / "gemini"
VENV_BIN = Path(sys.executable).parent
SESSION = "5a9e0000-0000-4000-8000-000000009e01"
GEMINI = os.environ.get("SNAPSHOTTER_GEMINI") or shutil.which("gemini")
MODEL = "gemini-2.5-flash"  # a concrete model: "auto" would add a routing request
# The events ``snapshotter init gemini`` wires (of the eleven Gemini CLI 0.61 has).
WIRED = ["SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "SessionEnd"]
QUIET = {
    "GEMINI_API_KEY": "test",
    "GEMINI_TELEMETRY_ENABLED": "false",
    "GEMINI_CLI_NO_RELAUNCH": "true",  # no child node process with more heap
}


@pytest.fixture(scope="module")
def gemini() -> str:
    if GEMINI is None:
        pytest.skip(
            "the gemini CLI is not installed (npm install --prefix DIR @google/gemini-cli; "
            "SNAPSHOTTER_GEMINI=DIR/node_modules/.bin/gemini)"
        )
    why = _unshare_works()
    if why is not None:
        pytest.skip(why)
    return GEMINI


def client_env(gemini: str) -> dict[str, str]:
    """This test's environment (its HOME), with this venv's snapshotter first on PATH.

    No GITHUB_SHA or SURFACE: with either, Gemini CLI starts hooks with only an
    allow-list of variables (no SNAPSHOTTER_DATA_DIR, no XDG_*)."""
    drop = ("GEMINI_", "GOOGLE_", "GITHUB_SHA", "SURFACE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    path = os.pathsep.join([str(VENV_BIN), str(Path(gemini).parent), env.get("PATH", "")])
    return {**env, **QUIET, "PATH": path}


def client_home(home: Path) -> None:
    """The user's settings: an API key login (else GOOGLE_GEMINI_BASE_URL alone selects
    the "gateway" login, which -p refuses: "Invalid auth method selected"); no telemetry."""
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    }
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=2))


def wire_gemini(root: Path, home: Path, gemini: str) -> None:
    """The hooks of ``snapshotter init gemini -C ROOT`` (this venv's ``snapshotter``, its
    bin first on PATH, so init writes the plain command), checked; then what init does
    not do: the folder trusted (``gemini -p`` in an untrusted folder exits 55) and the
    user's login settings (``client_home``)."""
    done = run_cli(
        "init",
        "gemini",
        "-C",
        root,
        env=client_env(gemini),
        command=[str(VENV_BIN / "snapshotter")],
    )
    assert done.returncode == 0, f"init gemini failed: {done.stderr}"
    settings = json.loads((root / ".gemini" / "settings.json").read_text())
    hooks = settings["hooks"]
    assert list(hooks) == WIRED, f"init wires these events: {list(hooks)}"
    entries = [(event, g, h) for event, groups in hooks.items() for g in groups for h in g["hooks"]]
    assert {h["command"] for _, _, h in entries} == {"snapshotter hook --arg dialect=gemini"}, (
        entries
    )
    assert all(h["type"] == "command" and h["timeout"] >= 1000 for _, _, h in entries), (
        f"command hooks, timeouts in ms: {entries}"
    )
    assert {e: g.get("matcher") for e, g, _ in entries if e.endswith("Tool")} == {
        "BeforeTool": "*",
        "AfterTool": "*",
    }, entries
    client_home(home)
    trusted = home / ".gemini" / "trustedFolders.json"
    trusted.parent.mkdir(parents=True, exist_ok=True)
    trusted.write_text(json.dumps({str(root): "TRUST_FOLDER"}))


def wrap_hooks(root: Path, log: Path) -> None:
    """Every hook's payload appended to ``log`` (one line each), before the command init
    wrote reads it; and the hook's environment, to ``log.env.jsonl``."""
    path = root / ".gemini" / "settings.json"
    settings = json.loads(path.read_text())
    env_log = shlex.quote(str(log.with_suffix(".env.jsonl")))
    dump_env = (
        f"{shlex.quote(sys.executable)} -c 'import json,os;print(json.dumps(dict(os.environ)))'"
    )
    for groups in settings["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                inner = (
                    f"{dump_env} >> {env_log}; tee -a {shlex.quote(str(log))} | {hook['command']}"
                )
                hook["command"] = f"sh -c {shlex.quote(inner)}"
    path.write_text(json.dumps(settings, indent=2))


def wired_repo(tmp_path: Path, home: Path, log: Path, gemini: str) -> Path:
    root = make_repo(tmp_path / "repo", REPO)
    wire_gemini(root, home, gemini)
    wrap_hooks(root, log)
    return root


def drive(
    tmp_path: Path, gemini: str, root: Path, script: dict[str, Any], runs: list[dict[str, Any]]
) -> dict[str, Any]:
    """Each run is ``gemini -p PROMPT`` in ``root`` (the first starts the session, the
    rest resume it), against the fake API, all in one namespace; the driver's summary."""
    work = tmp_path / "client"
    work.mkdir(exist_ok=True)
    env = client_env(gemini)
    spec_runs = []
    for index, run in enumerate(runs):
        session = ["--session-id" if index == 0 else "--resume", SESSION]
        argv = [gemini, "-p", run["prompt"], "--approval-mode", "yolo", "-m", MODEL, *session]
        spec_runs.append({"argv": argv, "cwd": str(root), "env": env, "timeout": 90, **run})
    summary = run_fake(FAKE, work, script, spec_runs)
    return summary


# The answers of the fake API, by the key in the prompt.
def shell(command: str) -> dict[str, Any]:
    return {"call": "run_shell_command", "args": {"command": command}}


TURN_1 = {
    "turn-1": [
        shell("rm b.txt"),
        {"call": "write_file", "args": {"file_path": "g.txt", "content": "g by the agent\n"}},
        {"text": "Removed b, wrote g."},
    ]
}
TURN_2 = {
    "turn-2": [
        shell("echo x > f.txt"),
        {
            "call": "replace",
            "args": {
                "file_path": "f.txt",
                "instruction": "Say who wrote f.",
                "old_string": "x",
                "new_string": "f by the agent",
            },
        },
        {"text": "Rewrote f."},
    ]
}
TURN_B = {"turn-b": [shell("rm b.txt; sleep 30"), {"text": "Removed b."}]}
PROMPTS = {
    "turn-1": "[turn-1] Remove b.txt and write g.txt",
    "turn-2": "[turn-2] Rewrite f.txt",
    "turn-b": "[turn-b] Remove b.txt",
}
AFTER_TURNS = {"f.txt": "f by the agent\n", "g.txt": "g by the agent\n", "b.txt": None}


def tree(root: Path) -> dict[str, str | None]:
    """The fixture's files as they are now, byte for byte (None: gone)."""
    return {
        rel: (root / rel).read_bytes().decode() if (root / rel).exists() else None
        for rel in sorted(REPO)
    }


def effect(event: dict[str, Any], scratch: Path) -> dict[str, Any]:
    """What one tool did to the files, done again in ``scratch`` (a copy of the files)."""
    name, args = event["tool_name"], event["tool_input"]
    before = tree(scratch)
    if name == "run_shell_command":
        command = args["command"].replace("; sleep 30", "")
        subprocess.run(["sh", "-c", command], cwd=scratch, check=True)
    elif name == "write_file":
        (scratch / args["file_path"]).write_text(args["content"])
    elif name == "replace":
        path = scratch / args["file_path"]
        path.write_text(path.read_text().replace(args["old_string"], args["new_string"], 1))
    after = tree(scratch)
    return {"files": {rel: after[rel] for rel in after if after[rel] != before[rel]}}


def as_steps(payloads: list[dict[str, Any]], scratch: Path) -> list[dict[str, Any]]:
    """Events, each BeforeTool followed by the files its tool changed (content, or None)."""
    make_repo(scratch, REPO, commit=False)
    steps: list[dict[str, Any]] = []
    for event in payloads:
        steps.append({"event": event})
        if event["hook_event_name"] == "BeforeTool":
            steps.append(effect(event, scratch))
    return steps


def shape(steps: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """What must not drift: each wired event's name and field names, in order. (The
    fixtures were recorded with every event wired; init wires six of them.)"""
    events = [s["event"] for s in steps if "event" in s]
    return [(e["hook_event_name"], sorted(e)) for e in events if e["hook_event_name"] in WIRED]


def hook_envs(log: Path) -> list[dict[str, str]]:
    lines = log.with_suffix(".env.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def recorded(name: str, steps: list[dict[str, Any]], gemini: str, how: str, **extra: Any) -> None:
    """Write the fixture when asked to (SNAPSHOTTER_RECORD_FIXTURES=1), then check the
    shape of this run against the stored one."""
    path = FIXTURES / name
    if os.environ.get("SNAPSHOTTER_RECORD_FIXTURES") == "1":
        version = subprocess.run([gemini, "--version"], capture_output=True, text=True)
        data = {
            "client": f"gemini-cli {version.stdout.strip()}",
            "how": how,
            "repo": REPO,
            **extra,
            "steps": steps,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1) + "\n")
    stored = json.loads(path.read_text())
    assert shape(steps) == shape(stored["steps"]), (
        f"Gemini CLI now sends other events or fields than {path.name} holds "
        f"(recorded from {stored['client']}); re-record with SNAPSHOTTER_RECORD_FIXTURES=1"
    )


def test_records_what_gemini_sends_to_the_hooks(
    tmp_path: Path, gemini: str, hermetic: Path
) -> None:
    """Two prompts in one session (the second resumes it): the hooks ran, in this order,
    with these fields, and the scripted tools changed the files."""
    log = tmp_path / "hooks.jsonl"
    root = wired_repo(tmp_path, hermetic, log, gemini)
    runs = [{"prompt": PROMPTS["turn-1"]}, {"prompt": PROMPTS["turn-2"]}]
    summary = drive(tmp_path, gemini, root, {**TURN_1, **TURN_2}, runs)
    succeeded(summary, tmp_path, "gemini")
    assert summary["served"] == [[key, step] for key in ("turn-1", "turn-2") for step in range(3)]
    assert tree(root) == AFTER_TURNS, "the scripted tools ran"

    payloads = read_payloads(log)
    names = [e["hook_event_name"] for e in payloads]
    for run in (names[: names.index("SessionEnd") + 1], names[names.index("SessionEnd") + 1 :]):
        assert run[:2] == ["SessionStart", "BeforeAgent"], names
        assert run[-2:] == ["AfterAgent", "SessionEnd"], f"SessionEnd is awaited in -p: {names}"
    starts = [e["source"] for e in payloads if e["hook_event_name"] == "SessionStart"]
    assert starts == ["startup", "resume"], starts
    tools = [(e["hook_event_name"], e["tool_name"]) for e in payloads if "tool_name" in e]
    assert tools == [
        (when, tool)
        for tool in ["run_shell_command", "write_file", "run_shell_command", "replace"]
        for when in ["BeforeTool", "AfterTool"]
    ], tools
    assert all(e["cwd"] == str(root) and e["session_id"] == SESSION for e in payloads)
    assert not any(
        "id" in k for e in payloads if "tool_name" in e for k in e if k != "session_id"
    ), "no tool-call id: a BeforeTool pairs with the next AfterTool"
    envs = hook_envs(log)
    assert len(envs) == len(payloads)
    assert {e["GEMINI_PROJECT_DIR"] for e in envs} == {str(root)}
    assert {e["CLAUDE_PROJECT_DIR"] for e in envs} == {str(root)}
    assert {e["GEMINI_SESSION_ID"] for e in envs} == {SESSION}

    # snapshotter ran on every event without failing the client (undo: test_undo_*).
    print(f"[realclient] snapshotter list --json: {listed(root)}")
    no_hook_failures()

    steps = as_steps(anonymised(payloads, root, hermetic), tmp_path / "scratch")
    assert tree(tmp_path / "scratch") == AFTER_TURNS, "the steps replay to what the tools did"
    recorded(
        "session.json",
        steps,
        gemini,
        "gemini -p, two prompts (--session-id, then --resume), --approval-mode yolo; fake "
        "Gemini API; hooks from snapshotter init gemini",
        after=AFTER_TURNS,
    )


def test_interrupted_mid_tool(tmp_path: Path, gemini: str, hermetic: Path) -> None:
    """SIGINT to ``gemini`` while its shell tool sleeps (after ``rm b.txt``)."""
    log = tmp_path / "hooks.jsonl"
    root = wired_repo(tmp_path, hermetic, log, gemini)
    interrupt = {"gone": str(root / "b.txt"), "signal": "SIGINT", "after": 1.0}
    runs = [{"prompt": PROMPTS["turn-b"], "interrupt": interrupt}]
    summary = drive(tmp_path, gemini, root, TURN_B, runs)
    run = summary["runs"][0]
    assert run["note"] == "sent SIGINT", summary
    assert run["seconds"] < 25, "the client stopped before the tool's sleep ended"
    assert not (root / "b.txt").exists()
    payloads = read_payloads(log)
    names = [e["hook_event_name"] for e in payloads]
    print(f"[realclient] SIGINT: exit {run['returncode']}, the client sent {names}")
    assert names[:2] == ["SessionStart", "BeforeAgent"], names
    assert names.count("BeforeTool") == 1 and "AfterTool" not in names, names
    assert "AfterAgent" not in names, names
    assert names[-1] == "SessionEnd", f"SIGINT ends the session with SessionEnd: {names}"
    no_hook_failures()

    # snapshotter closed the turn at SessionEnd as interrupted; undo brings b.txt back.
    turns = [cp for cp in listed(root) if cp["kind"] == "turn"]
    assert [(t["reason"], t["prompt"], files_of(t)) for t in turns] == [
        ("interrupted", PROMPTS["turn-b"], {"b.txt": "deleted"})
    ], turns
    shown = cli_ok(root, "list")
    assert f"interrupted: {PROMPTS['turn-b']}" in shown, shown
    cli_ok(root, "undo")
    assert (root / "b.txt").read_bytes() == REPO["b.txt"].encode(), "undo brings b.txt back"
    assert tree(root) == dict(REPO)

    steps = as_steps(anonymised(payloads, root, hermetic), tmp_path / "scratch")
    recorded(
        "interrupted.json",
        steps,
        gemini,
        "gemini -p, one prompt whose run_shell_command is 'rm b.txt; sleep 30'; SIGINT to "
        "gemini 1 s after b.txt is gone (the sleep is left out of the step's effect)",
        returncode=run["returncode"],
    )


def test_undo_restores_what_the_gemini_tools_changed(
    tmp_path: Path, gemini: str, hermetic: Path
) -> None:
    """One turn per prompt, its tools nested under it, and undo / redo / reset giving
    back the bytes."""
    log = tmp_path / "hooks.jsonl"
    root = wired_repo(tmp_path, hermetic, log, gemini)
    runs = [{"prompt": PROMPTS["turn-1"]}, {"prompt": PROMPTS["turn-2"]}]
    succeeded(drive(tmp_path, gemini, root, {**TURN_1, **TURN_2}, runs), tmp_path, "gemini")
    assert tree(root) == AFTER_TURNS

    cps = listed(root)
    turns = [cp for cp in cps if cp["kind"] == "turn"]
    assert [(t["prompt"], files_of(t)) for t in turns] == [
        (PROMPTS["turn-1"], {"b.txt": "deleted", "g.txt": "modified"}),
        (PROMPTS["turn-2"], {"f.txt": "modified"}),
    ], cps
    tools = [cp for cp in cps if cp["parent"] == turns[0]["id"]]
    assert [t["tool_name"] for t in tools] == ["run_shell_command", "write_file"], cps
    cli_ok(root, "undo")
    assert (root / "f.txt").read_text() == REPO["f.txt"], "undo takes back turn 2"
    assert (root / "g.txt").read_text() == "g by the agent\n"
    cli_ok(root, "undo")
    assert tree(root) == dict(REPO), "undo again takes back turn 1"
    cli_ok(root, "redo")
    cli_ok(root, "redo")
    assert tree(root) == AFTER_TURNS, "redo puts the agent's files back"
    cli_ok(root, "reset", "--original")
    assert tree(root) == dict(REPO)


# One prompt whose shell commands edit in place, write in a subfolder, and fail.
SHELL_REPO = {**REPO, "a.txt": "a as committed\n", "sub/keep.txt": "keep as committed\n"}
TURN_S = {
    "turn-s": [
        shell("sed -i 's/a as committed/a by sed/' a.txt"),
        shell("cd sub && echo deep > deep.txt"),
        shell("cat missing.txt"),
        {
            "call": "replace",
            "args": {
                "file_path": "f.txt",
                "instruction": "Say who wrote f.",
                "old_string": "f as committed",
                "new_string": "f by the agent",
            },
        },
        {"text": "Edited a, wrote sub/deep.txt, rewrote f."},
    ]
}
PROMPT_S = "[turn-s] Edit a.txt with sed, write sub/deep.txt, read missing.txt, rewrite f.txt"
AFTER_S = {
    **SHELL_REPO,
    "a.txt": "a by sed\n",
    "sub/deep.txt": "deep\n",
    "f.txt": "f by the agent\n",
}


def whole_tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes, but for ``.git`` and the settings file
    ``init gemini`` wrote (with the hooks in it)."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and rel.split("/")[0] != ".git" and rel != ".gemini/settings.json":
            found[rel] = path.read_bytes()
    return found


def as_bytes(files: dict[str, str]) -> dict[str, bytes]:
    return {rel: content.encode() for rel, content in sorted(files.items())}


def test_shell_commands_sed_cd_and_a_failing_one(
    tmp_path: Path, gemini: str, hermetic: Path
) -> None:
    """``sed -i``, a ``cd sub &&`` that writes there, a command that exits 1, then a
    ``replace``, in one prompt: one turn with its four tools nested, the files each
    changed (none for the failed one), and undo / redo / reset --original giving back
    the bytes of the whole tree."""
    log = tmp_path / "hooks.jsonl"
    root = make_repo(tmp_path / "repo", SHELL_REPO)
    wire_gemini(root, hermetic, gemini)
    wrap_hooks(root, log)
    committed = as_bytes(SHELL_REPO)
    assert whole_tree(root) == committed
    summary = drive(tmp_path, gemini, root, TURN_S, [{"prompt": PROMPT_S}])
    succeeded(summary, tmp_path, "gemini")
    assert summary["served"] == [["turn-s", step] for step in range(5)], summary
    agents = as_bytes(AFTER_S)
    assert whole_tree(root) == agents, "the scripted tools ran"

    payloads = read_payloads(log)
    names = [e["hook_event_name"] for e in payloads]
    assert names[:2] == ["SessionStart", "BeforeAgent"], names
    assert names[-2:] == ["AfterAgent", "SessionEnd"], names
    afters = [e for e in payloads if e["hook_event_name"] == "AfterTool"]
    assert [(e["tool_name"], e["tool_input"]) for e in afters] == [
        (answer["call"], answer["args"]) for answer in TURN_S["turn-s"][:4]
    ], afters
    failed = afters[2]
    print(f"[realclient] AfterTool of the failing command: {json.dumps(failed['tool_response'])}")
    told = [
        json.loads(line)["function_responses"]
        for line in (tmp_path / "client" / "requests.jsonl").read_text().splitlines()
        if json.loads(line).get("scripted") == ["turn-s", 3]
    ]
    print(f"[realclient] the model was told of it: {json.dumps(told[:1])}")
    # A non-zero exit is no error to Gemini CLI: AfterTool has the output and the
    # exit code in llmContent (as the model is told), and no "error" field.
    assert "error" not in failed["tool_response"], failed
    assert "Exit Code: 1" in failed["tool_response"]["llmContent"], failed
    no_hook_failures()

    cps = listed(root)
    turns = [cp for cp in cps if cp["kind"] == "turn"]
    assert [(t["prompt"], files_of(t)) for t in turns] == [
        (PROMPT_S, {"a.txt": "modified", "sub/deep.txt": "added", "f.txt": "modified"})
    ], cps
    tools = [cp for cp in cps if cp["parent"] == turns[0]["id"]]
    print(f"[realclient] the turn's tools: {[(t['label'], files_of(t)) for t in tools]}")
    # A tool that changed nothing (the failed cat) leaves no checkpoint.
    assert [(t["tool_name"], files_of(t)) for t in tools] == [
        ("run_shell_command", {"a.txt": "modified"}),
        ("run_shell_command", {"sub/deep.txt": "added"}),
        ("replace", {"f.txt": "modified"}),
    ], tools
    assert "sed -i" in tools[0]["label"] and "cd sub" in tools[1]["label"], tools
    assert all(cp["parent"] == turns[0]["id"] for cp in cps if cp["kind"] != "turn"), cps

    cli_ok(root, "undo")
    assert whole_tree(root) == committed, "undo gives back the committed bytes"
    cli_ok(root, "redo")
    assert whole_tree(root) == agents, "redo puts the agent's bytes back"
    cli_ok(root, "reset", "--original")
    assert whole_tree(root) == committed, "reset --original gives back the committed bytes"
    no_hook_failures()
