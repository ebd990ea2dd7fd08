"""The real GitHub Copilot CLI (npm ``@github/copilot``) running ``snapshotter hook`` as its hooks.

Opt-in: ``pytest -m realclient`` (the default run leaves these out). Needs the
``copilot`` CLI (``npm install @github/copilot``; its path in
``SNAPSHOTTER_COPILOT``, else ``copilot`` on PATH) and ``unshare`` with ``ip``.
Copilot runs with no GitHub login, in its BYOK offline mode
(``COPILOT_OFFLINE=true``, ``COPILOT_PROVIDER_BASE_URL``: ``copilot help
providers``), against the fake chat-completions API of ``fake_copilot.py``
that scripts its ``bash`` / ``edit`` / ``create`` tool calls, in a network
namespace with only loopback and a PID namespace of its own.

Copilot reads hooks from ``.github/hooks/*.json`` (camelCase event names;
payloads in camelCase that do NOT name the event) and also from
``.claude/settings.json`` (PascalCase event names; snake_case payloads with
``hook_event_name``, no ``tool_use_id``). ``wire_copilot`` writes the first
(to be replaced by ``snapshotter init copilot``).

``SNAPSHOTTER_RECORD_FIXTURES=1 pytest -m realclient -k records`` writes what
the client sent into ``fixtures/sessions/copilot/session.json``.
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
from builders import make_repo, run_cli

from snapshotter.store.logfile import log_path

pytestmark = pytest.mark.realclient

HERE = Path(__file__).parent
FAKE = HERE / "fake_copilot.py"
FIXTURE = HERE.parent / "fixtures" / "sessions" / "copilot" / "session.json"
VENV_BIN = Path(sys.executable).parent
SESSION = "5a9e0000-0000-4000-8000-0000c0b1107a"
COPILOT = os.environ.get("SNAPSHOTTER_COPILOT") or shutil.which("copilot")
REPO = {"a.txt": "a as committed\n", "b.txt": "b as committed\n", "f.txt": "f as committed\n"}
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
# The .github/hooks events, in camelCase (the key names the event: the payload does not).
CAMEL_EVENTS = [
    "sessionStart",
    "userPromptSubmitted",
    "preToolUse",
    "postToolUse",
    "postToolUseFailure",
    "agentStop",
    "errorOccurred",
    "sessionEnd",
]
# The .claude/settings.json events (Claude Code's names); Copilot sends them snake_case.
PASCAL_EVENTS = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SessionEnd",
]
# No request but the model's: BYOK offline mode, no telemetry, no update check.
QUIET = {
    "COPILOT_OFFLINE": "true",
    "COPILOT_MODEL": "gpt-4.1",
    "COPILOT_PROVIDER_API_KEY": "test",
    "COPILOT_AUTO_UPDATE": "false",
    # Exactly "true" also trusts the working directory, so that its hooks are loaded.
    "COPILOT_ALLOW_ALL": "true",
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


@pytest.fixture(scope="module")
def copilot() -> str:
    if COPILOT is None:
        pytest.skip(
            "the copilot CLI is not installed (npm install @github/copilot; "
            "its path in SNAPSHOTTER_COPILOT)"
        )
    why = _unshare_works()
    if why is not None:
        pytest.skip(why)
    return COPILOT


@pytest.fixture(scope="module")
def copilot_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the copilot binary unpacks its 200 MB of JS (once per module, not per HOME)."""
    return tmp_path_factory.mktemp("copilot-cache")


def client_env(copilot: str, cache: Path) -> dict[str, str]:
    """This test's environment (its HOME), with this venv's snapshotter first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COPILOT_", "GITHUB_", "GH_"))}
    path = os.pathsep.join([str(VENV_BIN), str(Path(copilot).parent), env.get("PATH", "")])
    return {**env, **QUIET, "PATH": path, "XDG_CACHE_HOME": str(cache)}


def wire_copilot(root: Path, log: Path | None = None) -> Path:
    """``.github/hooks/snapshotter.json`` running ``snapshotter hook`` on every event.

    To be replaced by ``snapshotter init copilot``. The payloads do not name
    their event, so each entry passes it on (``--event``: a guess at what init
    will write; today's ``snapshotter hook`` may ignore it). With ``log``, each
    payload is appended there too, after a ``{"hook": EVENT}`` line.
    """
    hooks: dict[str, list[dict[str, Any]]] = {}
    for event in CAMEL_EVENTS:
        command = "snapshotter hook"
        if log is not None:
            mark = shlex.quote(json.dumps({"hook": event}))
            quoted = shlex.quote(str(log))
            command = f"printf '%s\\n' {mark} >> {quoted}; tee -a {quoted} | {command}"
        hooks[event] = [{"type": "command", "bash": command, "timeoutSec": 30}]
    path = root / ".github" / "hooks" / "snapshotter.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 1, "hooks": hooks}, indent=2) + "\n")
    return path


def wire_claude_settings_log(root: Path, log: Path) -> None:
    """``.claude/settings.json`` hooks that only record (Copilot runs these too)."""
    command = f"tee -a {shlex.quote(str(log))} > /dev/null"
    hooks = {}
    for event in PASCAL_EVENTS:
        group: dict[str, Any] = {"hooks": [{"type": "command", "command": command}]}
        if event in ("PreToolUse", "PostToolUse"):
            group["matcher"] = "*"
        hooks[event] = [group]
    path = root / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks}, indent=2) + "\n")


def drive(
    tmp_path: Path,
    copilot: str,
    cache: Path,
    root: Path,
    script: dict[str, Any],
    prompts: list[str],
) -> dict[str, Any]:
    """Each prompt is one ``copilot -p`` in ``root`` (the first starts the session, the
    rest resume it), against the fake API, all in one namespace; the driver's summary."""
    work = tmp_path / "client"
    work.mkdir(exist_ok=True)
    env = client_env(copilot, cache)
    runs = []
    for index, prompt in enumerate(prompts):
        session = f"--session-id={SESSION}" if index == 0 else f"--resume={SESSION}"
        argv = [copilot, "-p", prompt, "--allow-all-tools", "--no-auto-update", session]
        argv.append("--disable-client-telemetry")
        runs.append({"argv": argv, "cwd": str(root), "env": env, "timeout": 90})
    spec = {
        "out": str(work / "summary.json"),
        "requests": str(work / "requests.jsonl"),
        "script": script,
        "runs": runs,
    }
    (work / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run(
        [*UNSHARE, "sh", "-c", LO_UP, sys.executable, str(FAKE), str(work / "spec.json")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"the driver failed: {done.stderr}"
    summary: dict[str, Any] = json.loads((work / "summary.json").read_text())
    print(f"\n[realclient] {summary['runs']}")
    codes = [r["returncode"] for r in summary["runs"]]
    err = (work / "summary.stderr").read_text(errors="replace")
    out = (work / "summary.stdout").read_text(errors="replace")
    assert codes == [0] * len(codes), f"copilot exit codes {codes}; stdout {out}; stderr: {err}"
    return summary


def read_objects(log: Path) -> list[dict[str, Any]]:
    decoder, text, found, at = json.JSONDecoder(), log.read_text(), [], 0
    while (at := len(text) - len(text[at:].lstrip())) < len(text):
        obj, at = decoder.raw_decode(text, at)
        found.append(obj)
    return found


def read_marked(log: Path) -> list[tuple[str, dict[str, Any]]]:
    """(configured event, payload) pairs from a ``wire_copilot`` log."""
    objects = read_objects(log)
    pairs = list(zip(objects[::2], objects[1::2], strict=True))
    assert all(set(mark) == {"hook"} for mark, _ in pairs), objects
    return [(mark["hook"], payload) for mark, payload in pairs]


# The answers of the fake API, by the key in the prompt; paths are filled in per run.
def script_for(root: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        "turn-1": [
            {"tool": "bash", "args": {"command": "rm b.txt", "description": "Remove b.txt"}},
            {"tool": "bash", "args": {"command": "echo x > f.txt", "description": "Write f"}},
            {
                "tool": "edit",
                "args": {
                    "path": str(root / "a.txt"),
                    "old_str": "a as committed",
                    "new_str": "a by the agent",
                },
            },
            {"tool": "create", "args": {"path": str(root / "c.txt"), "file_text": "c is new\n"}},
            {"text": "Done: b removed, f and a changed, c created."},
        ],
        "turn-2": [
            {"tool": "bash", "args": {"command": "git checkout -- f.txt", "description": "Undo f"}},
            {"text": "f.txt is as it was."},
        ],
    }


PROMPTS = [
    "[turn-1] Remove b.txt, put x in f.txt, edit a.txt, create c.txt",
    "[turn-2] Take back the change to f.txt",
]
SERVED = [["turn-1", i] for i in range(5)] + [["turn-2", 0], ["turn-2", 1]]


def after_the_session(root: Path) -> None:
    assert not (root / "b.txt").exists(), "the bash tool removed b.txt"
    assert (root / "f.txt").read_text() == REPO["f.txt"], "turn 2 checked f.txt out again"
    assert (root / "a.txt").read_text() == "a by the agent\n", "the edit tool changed a.txt"
    assert (root / "c.txt").read_text() == "c is new\n", "the create tool made c.txt"


def test_copilot_runs_snapshotter_hook_from_github_hooks(
    tmp_path: Path, copilot: str, copilot_cache: Path, hermetic: Path
) -> None:
    """Two prompts in one session; every configured event reaches ``snapshotter hook``."""
    root = make_repo(tmp_path / "repo", REPO)
    log = tmp_path / "hooks.jsonl"
    wire_copilot(root, log)
    summary = drive(tmp_path, copilot, copilot_cache, root, script_for(root), PROMPTS)
    assert summary["served"] == SERVED
    after_the_session(root)
    events = [hook for hook, _ in read_marked(log)]
    turn = ["userPromptSubmitted", *["preToolUse", "postToolUse"] * 4, "agentStop", "sessionEnd"]
    turn2 = ["userPromptSubmitted", "preToolUse", "postToolUse", "agentStop", "sessionEnd"]
    assert events == ["sessionStart", *turn, "sessionStart", *turn2], events
    # TODO(copilot): once `snapshotter hook` understands Copilot's camelCase payloads
    # (and learns their event from `init copilot`'s command line), assert what
    # test_realclient_claude.py does: two turns listed, the first with
    # {a.txt: modified, b.txt: deleted, c.txt: added}, the second with no net change,
    # its tools nested under it; `undo` passes the empty turn and restores the
    # committed a.txt and b.txt and removes c.txt; `redo` puts them back; no hook
    # failures logged.


def anonymised(payloads: Any, root: Path, home: Path) -> Any:
    text = json.dumps(payloads)
    for placeholder, real in (("{home}", home), ("{root}", root)):
        text = text.replace(json.dumps(str(real))[1:-1], placeholder)
    return json.loads(text)


def effects(name: str, args: dict[str, Any], files: dict[str, str], root: Path) -> dict[str, Any]:
    """What one tool call did to the tree, as a fixture step."""
    if name == "bash":
        return {"shell": args["command"]}
    rel = str(Path(args["path"]).relative_to(root))
    if name == "create":
        files[rel] = args["file_text"]
    else:
        files[rel] = files[rel].replace(args["old_str"], args["new_str"], 1)
    return {"edits": [{"op": "write", "path": rel, "content": files[rel]}]}


# In the .claude/settings.json flavour Copilot names its tools as Claude Code would.
CLAUDE_TOOLS = {"Bash": "bash", "Edit": "edit", "Write": "create"}


def as_steps(events: list[tuple[str | None, dict[str, Any]]], root: Path) -> list[dict[str, Any]]:
    """Events (with their configured hook name, where the payload lacks one), each
    pre-tool event followed by what the tool did."""
    files = dict(REPO)
    steps: list[dict[str, Any]] = []
    for hook, payload in events:
        steps.append({"hook": hook, "event": payload} if hook else {"event": payload})
        if hook == "preToolUse":
            steps.append(effects(payload["toolName"], payload["toolArgs"], files, root))
        elif payload.get("hook_event_name") == "PreToolUse":
            name = CLAUDE_TOOLS.get(payload["tool_name"], payload["tool_name"])
            steps.append(effects(name, payload["tool_input"], files, root))
    return steps


def shape(steps: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """What must not drift: each event's name and field names, in order."""
    return [
        (s.get("hook") or s["event"]["hook_event_name"], sorted(s["event"]))
        for s in steps
        if "event" in s
    ]


def test_records_what_copilot_sends_to_the_hooks(
    tmp_path: Path, copilot: str, copilot_cache: Path, hermetic: Path
) -> None:
    """Both flavours in one session; their shape matches the recorded fixture."""
    root = make_repo(tmp_path / "repo", REPO)
    camel_log, pascal_log = tmp_path / "camel.jsonl", tmp_path / "pascal.jsonl"
    wire_copilot(root, camel_log)
    wire_claude_settings_log(root, pascal_log)
    summary = drive(tmp_path, copilot, copilot_cache, root, script_for(root), PROMPTS)
    assert summary["served"] == SERVED
    after_the_session(root)
    camel = as_steps([(h, p) for h, p in read_marked(camel_log)], root)
    pascal = as_steps([(None, p) for p in read_objects(pascal_log)], root)
    camel, pascal = anonymised(camel, root, hermetic), anonymised(pascal, root, hermetic)
    assert all("hook_event_name" not in s["event"] for s in camel if "event" in s), (
        "the .github/hooks payloads do not name their event"
    )
    assert all("tool_use_id" not in s["event"] for s in pascal if "event" in s)
    if os.environ.get("SNAPSHOTTER_RECORD_FIXTURES") == "1":
        version = subprocess.run(
            [copilot, "--version"],
            capture_output=True,
            text=True,
            env=client_env(copilot, copilot_cache),
            check=False,
        )
        recorded = {
            "client": version.stdout.strip().splitlines()[0],
            "how": "copilot -p --allow-all-tools, two prompts (--session-id, then --resume), "
            "BYOK offline mode (COPILOT_OFFLINE=true) against a fake chat-completions API; "
            "hooks in .github/hooks/snapshotter.json (camelCase) and .claude/settings.json "
            "(PascalCase), both run by the same session",
            "repo": REPO,
            "steps": camel,
            "claude_settings_steps": pascal,
        }
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        FIXTURE.write_text(json.dumps(recorded, indent=1) + "\n")
    stored = json.loads(FIXTURE.read_text())
    assert shape(camel) == shape(stored["steps"]), (
        f"Copilot now sends other events or fields than {FIXTURE.name} holds "
        f"(recorded from {stored['client']}); re-record with SNAPSHOTTER_RECORD_FIXTURES=1"
    )
    assert shape(pascal) == shape(stored["claude_settings_steps"])


def test_copilot_runs_claude_code_hooks_of_init_claude_code(
    tmp_path: Path, copilot: str, copilot_cache: Path, hermetic: Path
) -> None:
    """A repository wired by ``snapshotter init claude-code`` only: Copilot runs those
    hooks too, with Claude-shaped payloads (tool names Bash/Edit/Write, no tool_use_id)."""
    root = make_repo(tmp_path / "repo", REPO)
    env = client_env(copilot, copilot_cache)
    done = run_cli("init", "claude-code", cwd=root, env=env)
    assert done.returncode == 0, f"init claude-code failed: {done.stderr}"
    summary = drive(tmp_path, copilot, copilot_cache, root, script_for(root), PROMPTS)
    assert summary["served"] == SERVED
    after_the_session(root)
    listing = run_cli("list", cwd=root)
    print(f"[realclient] list after a Copilot session on Claude hooks:\n{listing.stdout}")
    log = log_path(Path(os.environ["SNAPSHOTTER_DATA_DIR"]))
    print(f"[realclient] hook failures: {log.read_text() if log.exists() else 'none'}")
    # TODO(copilot): decide whether `snapshotter hook` should take Copilot's
    # Claude-flavoured payloads as Claude Code's (then assert two turns and undo here),
    # and what `init copilot` does when .claude/settings.json is wired too: Copilot
    # then runs both, so every event reaches `snapshotter hook` twice. Seen with
    # snapshotter at 3fe852c: no failures logged, turn 2 listed as a turn with its
    # tool nested, but turn 1's four tools listed at the top level with no turn
    # (its SessionStart says source "new", where Claude Code says "startup").
