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
``hook_event_name``, no ``tool_use_id``). ``wire_copilot`` writes the first with
``snapshotter init copilot``, ``wire_claude`` the second with ``snapshotter init
claude-code``; both run this venv's ``snapshotter`` as a process. After the two
prompts, ``assert_turns_and_undo`` (shared with the replay of the recorded
payloads, ``test_copilot_recorded.py``) wants one turn per prompt with its tools
under it, and undo / redo / ``reset --original`` giving back the exact bytes.

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
from builders import cli_ok, files_of, listed, make_repo, run_cli, worktree_bytes
from test_copilot_recorded import assert_turns_and_undo
from test_realclient_claude import _unshare_works, no_hook_failures, run_fake

from snapshotter.hooks.dialects import claude_code

pytestmark = pytest.mark.realclient

HERE = Path(__file__).parents[1]  # tests/: the fake APIs live beside builders.py
FAKE = HERE / "fake_copilot.py"
FIXTURE = HERE.parent / "fixtures" / "sessions" / "copilot" / "session.json"
VENV_BIN = Path(sys.executable).parent
SESSION = "5a9e0000-0000-4000-8000-0000c0b1107a"
COPILOT = os.environ.get("SNAPSHOTTER_COPILOT") or shutil.which("copilot")
REPO = {"a.txt": "a as committed\n", "b.txt": "b as committed\n", "f.txt": "f as committed\n"}
# This venv's console script, run as a process (as the client runs the hooks).
SNAPSHOTTER_BIN = (str(VENV_BIN / "snapshotter"),)
# The .claude/settings.json events (Claude Code's names); Copilot sends them snake_case.
PASCAL_EVENTS = [e for e in claude_code.DIALECT.events if e != "PostToolUseFailure"]
# No request but the model's: BYOK offline mode, no telemetry, no update check.
QUIET = {
    "COPILOT_OFFLINE": "true",
    "COPILOT_MODEL": "gpt-4.1",
    "COPILOT_PROVIDER_API_KEY": "test",
    "COPILOT_AUTO_UPDATE": "false",
    # Exactly "true" also trusts the working directory, so that its hooks are loaded.
    "COPILOT_ALLOW_ALL": "true",
}


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


def init(runtime: str, root: Path, env: dict[str, str]) -> Path:
    """``snapshotter init RUNTIME -C ROOT`` (this venv's, first on PATH in ``env``): its file."""
    done = run_cli("init", runtime, "-C", root, env=env, command=SNAPSHOTTER_BIN)
    assert done.returncode == 0, f"init {runtime} failed: {done.stderr}"
    config = {"copilot": ".github/hooks/snapshotter.json", "claude-code": ".claude/settings.json"}
    return root / config[runtime]


def wire_copilot(root: Path, env: dict[str, str], log: Path | None = None) -> Path:
    """``.github/hooks/snapshotter.json`` as ``snapshotter init copilot`` writes it.

    The payloads do not name their event, so init's commands do
    (``snapshotter hook --arg dialect=copilot --arg event=NAME``). With ``log``,
    each of init's commands is wrapped so that it first appends a ``{"hook":
    NAME}`` line and the payload there (``tee``), then runs as written.
    """
    path = init("copilot", root, env)
    config = json.loads(path.read_text())
    assert config["version"] == 1, config
    for event, entries in config["hooks"].items():
        for entry in entries:
            assert entry["bash"].startswith("snapshotter hook "), entry
            assert f"--arg event={event}" in entry["bash"], entry
            if log is not None:
                mark = shlex.quote(json.dumps({"hook": event}))
                quoted = shlex.quote(str(log))
                record = f"printf '%s\\n' {mark} >> {quoted}; tee -a {quoted}"
                entry["bash"] = f"{record} | {entry['bash']}"
    if log is not None:
        path.write_text(json.dumps(config, indent=2) + "\n")
    return path


def wire_claude(root: Path, env: dict[str, str]) -> Path:
    """``.claude/settings.json`` as ``snapshotter init claude-code`` writes it (plain
    ``snapshotter hook``: its payloads name their event)."""
    return init("claude-code", root, env)


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
    summary = run_fake(FAKE, work, script, runs)
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


def configs(root: Path) -> dict[str, bytes]:
    """The files init wrote (there before the session; undo must leave them)."""
    return {rel: data for rel, data in worktree_bytes(root).items() if rel not in REPO}


def test_copilot_runs_snapshotter_hook_from_github_hooks(
    tmp_path: Path, copilot: str, copilot_cache: Path, hermetic: Path
) -> None:
    """Two prompts in one session, wired by ``init copilot``: every configured event
    reaches ``snapshotter hook``; two turns, their tools under them; undo is byte-exact."""
    root = make_repo(tmp_path / "repo", REPO)
    log = tmp_path / "hooks.jsonl"
    wire_copilot(root, client_env(copilot, copilot_cache), log)
    wired = configs(root)
    assert list(wired) == [".github/hooks/snapshotter.json"], wired
    summary = drive(tmp_path, copilot, copilot_cache, root, script_for(root), PROMPTS)
    assert summary["served"] == SERVED
    after_the_session(root)
    events = [hook for hook, _ in read_marked(log)]
    turn = ["userPromptSubmitted", *["preToolUse", "postToolUse"] * 4, "agentStop", "sessionEnd"]
    turn2 = ["userPromptSubmitted", "preToolUse", "postToolUse", "agentStop", "sessionEnd"]
    assert events == ["sessionStart", *turn, "sessionStart", *turn2], events
    print(f"[realclient] list:\n{run_cli('list', cwd=root).stdout}")
    no_hook_failures()
    assert_turns_and_undo(root, wired)


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
    """What must not drift: each event's name and field names, in the order of their
    ``timestamp`` (Copilot does not wait for a sessionStart hook before running the
    prompt's: with slower hooks the log can hold SessionStart after UserPromptSubmit)."""
    events = sorted((s for s in steps if "event" in s), key=lambda s: s["event"]["timestamp"])
    return [(s.get("hook") or s["event"]["hook_event_name"], sorted(s["event"])) for s in events]


def test_records_what_copilot_sends_to_the_hooks(
    tmp_path: Path, copilot: str, copilot_cache: Path, hermetic: Path
) -> None:
    """Both flavours in one session; their shape matches the recorded fixture."""
    root = make_repo(tmp_path / "repo", REPO)
    camel_log, pascal_log = tmp_path / "camel.jsonl", tmp_path / "pascal.jsonl"
    wire_copilot(root, client_env(copilot, copilot_cache), camel_log)
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
    hooks too, with Claude-shaped payloads (tool names Bash/Edit/Write, no tool_use_id,
    turn 1's SessionStart with source "new"). Two turns, their tools under them (at
    3fe852c turn 1's tools were listed at the top level with no turn); undo byte-exact."""
    root = make_repo(tmp_path / "repo", REPO)
    wire_claude(root, client_env(copilot, copilot_cache))
    wired = configs(root)
    assert list(wired) == [".claude/settings.json"], wired
    summary = drive(tmp_path, copilot, copilot_cache, root, script_for(root), PROMPTS)
    assert summary["served"] == SERVED
    after_the_session(root)
    print(f"[realclient] list:\n{run_cli('list', cwd=root).stdout}")
    no_hook_failures()
    assert_turns_and_undo(root, wired)


def test_copilot_with_both_wirings_runs_every_event_twice(
    tmp_path: Path, copilot: str, copilot_cache: Path, hermetic: Path
) -> None:
    """``init copilot`` and ``init claude-code`` in one repository: Copilot runs both
    sets, so every event reaches ``snapshotter hook`` twice, in two shapes. Still one
    turn per prompt, each tool once, undo byte-exact."""
    root = make_repo(tmp_path / "repo", REPO)
    env = client_env(copilot, copilot_cache)
    wire_copilot(root, env)
    wire_claude(root, env)
    wired = configs(root)
    assert sorted(wired) == [".claude/settings.json", ".github/hooks/snapshotter.json"], wired
    summary = drive(tmp_path, copilot, copilot_cache, root, script_for(root), PROMPTS)
    assert summary["served"] == SERVED
    after_the_session(root)
    print(f"[realclient] list:\n{run_cli('list', cwd=root).stdout}")
    no_hook_failures()
    assert_turns_and_undo(root, wired)


# One prompt: sed in place, a `cd` into a subdirectory, a command that fails, an edit.
SHELLS_REPO = {**REPO, "sub/keep.txt": "keep as committed\n"}
SHELLS_AFTER = {
    **SHELLS_REPO,
    "a.txt": "a by sed\n",
    "f.txt": "f by the agent\n",
    "sub/deep.txt": "deep\n",
}
SHELLS_FILES = {"a.txt": "modified", "f.txt": "modified", "sub/deep.txt": "added"}
SED = "sed -i 's/a as committed/a by sed/' a.txt"
CD_SUB = "cd sub && echo deep > deep.txt"
FAILS = "cat missing.txt"
# The turn's tools, as listed: the failing command changed nothing, so it has none.
SHELLS_TOOLS = [
    (SED, {"a.txt": "modified"}),
    (CD_SUB, {"sub/deep.txt": "added"}),
    (None, {"f.txt": "modified"}),
]


def shells_script(root: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        "shells": [
            {"tool": "bash", "args": {"command": SED, "description": "sed a.txt"}},
            {"tool": "bash", "args": {"command": CD_SUB, "description": "Write sub/deep.txt"}},
            {"tool": "bash", "args": {"command": FAILS, "description": "Read a missing file"}},
            {
                "tool": "edit",
                "args": {
                    "path": str(root / "f.txt"),
                    "old_str": "f as committed",
                    "new_str": "f by the agent",
                },
            },
            {"text": "Done: a by sed, sub/deep.txt written, missing.txt is missing, f edited."},
        ]
    }


def test_copilot_sed_cd_and_a_failing_command_in_one_turn(
    tmp_path: Path, copilot: str, copilot_cache: Path, hermetic: Path
) -> None:
    """One prompt, wired by ``init copilot``: ``sed -i`` on a.txt, ``cd sub && echo >``
    a new file there, a command that exits non-zero, an edit of f.txt. One turn, its
    tools under it, its files exactly those three; undo / redo / reset byte-exact."""
    root = make_repo(tmp_path / "repo", SHELLS_REPO)
    log = tmp_path / "hooks.jsonl"
    wire_copilot(root, client_env(copilot, copilot_cache), log)
    wired = {rel: data for rel, data in worktree_bytes(root).items() if rel not in SHELLS_REPO}
    assert list(wired) == [".github/hooks/snapshotter.json"], wired
    prompt = "[shells] sed a.txt, write sub/deep.txt, read missing.txt, edit f.txt"
    summary = drive(tmp_path, copilot, copilot_cache, root, shells_script(root), [prompt])
    assert summary["served"] == [["shells", i] for i in range(5)]
    committed = {**{k: v.encode() for k, v in SHELLS_REPO.items()}, **wired}
    agents = {**{k: v.encode() for k, v in SHELLS_AFTER.items()}, **wired}
    assert worktree_bytes(root) == agents, "the agent's tree"
    marked = read_marked(log)
    events = [hook for hook, _ in marked]
    turn_events = ["userPromptSubmitted", *["preToolUse", "postToolUse"] * 4, "agentStop"]
    # init wires postToolUseFailure too; Copilot 1.0.102 sends none for a non-zero exit.
    assert events == ["sessionStart", *turn_events, "sessionEnd"], events
    results = [p["toolResult"] for hook, p in marked if hook == "postToolUse"]
    print(f"[realclient] the failing command's postToolUse: {results[2]}")
    assert results[2]["resultType"] == "success", results[2]
    assert "exit code 1" in results[2]["textResultForLlm"], results[2]
    print(f"[realclient] list:\n{run_cli('list', cwd=root).stdout}")
    no_hook_failures()

    cps = listed(root)
    seen = [(cp["id"], cp["kind"], cp["parent"], cp["command"], files_of(cp)) for cp in cps]
    turns = [cp for cp in cps if cp["kind"] == "turn"]
    assert len(turns) == 1, f"one turn: {seen}"
    (turn,) = turns
    assert (turn["reason"], files_of(turn)) == ("turn_end", SHELLS_FILES), seen
    assert all(cp["parent"] == turn["id"] for cp in cps if cp is not turn), seen
    nested = [(cp["command"], files_of(cp)) for cp in cps if cp["parent"] == turn["id"]]
    assert nested == SHELLS_TOOLS, f"the turn's tools, the failing one with none: {seen}"

    out = cli_ok(root, "undo")
    assert f"undid checkpoint {turn['id']}" in out, out
    assert worktree_bytes(root) == committed, "undo gives back the committed bytes"
    cli_ok(root, "redo")
    assert worktree_bytes(root) == agents, "redo puts the agent's bytes back"
    cli_ok(root, "reset", "--original")
    assert worktree_bytes(root) == committed, "reset --original: the committed bytes"
