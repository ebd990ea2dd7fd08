"""The real OpenAI Codex CLI, its command hooks wired to ``snapshotter hook``, then undo.

Opt-in: ``pytest -m realclient`` (the default run leaves these out). Needs the
``codex`` CLI (``npm install --prefix ../codex-cli @openai/codex`` next to this
checkout, ``npm install -g @openai/codex``, or its path in ``SNAPSHOTTER_CODEX``)
and ``unshare`` with ``ip``, as ``test_realclient_claude.py``: each ``codex exec``
runs in a network namespace with only loopback, against the fake Responses API
of ``fake_openai.py`` that scripts its ``exec_command`` and ``apply_patch``
calls, in a PID namespace of its own. The hooks are the real ones:
``snapshotter hook`` processes started by Codex, their payloads also appended
to a log by ``tee``.

Codex runs a hook from ``.codex/hooks.json`` only if the project is trusted
(``[projects."ROOT"] trust_level = "trusted"``) and the hook itself is
(``[hooks.state."KEY"] trusted_hash = "sha256:…"`` in ``$CODEX_HOME/config.toml``);
an untrusted hook is skipped without a word. ``wire_codex`` runs the real
``snapshotter init codex --trust``, which writes both;
``test_codex_agrees_with_our_trusted_hashes`` asks Codex itself (``codex
app-server``, ``hooks/list``) whether it trusts every hook init wrote. The other
tests wrap each hook in ``tee`` (a new command, so a new hash): ``trust_hooks``,
which computes the hashes as Codex 0.169 does, trusts them in place of init's.

``SNAPSHOTTER_RECORD_FIXTURES=1 pytest -m realclient -k records`` writes what the
client sent into ``fixtures/sessions/codex/`` (``session.json``,
``interrupted.json``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from builders import cli_ok, files_of, listed, load_state, make_repo
from test_realclient_claude import (
    _unshare_works,
    anonymised,
    no_hook_failures,
    read_payloads,
    run_fake,
    succeeded,
)

from snapshotter.hooks.dialects import codex as codex_dialect

pytestmark = pytest.mark.realclient

HERE = Path(__file__).parents[1]  # tests/: the fake APIs live beside builders.py
FAKE = HERE / "fake_openai.py"
FIXTURES = HERE.parent / "fixtures" / "sessions" / "codex"
VENV_BIN = Path(sys.executable).parent
# Where the brief's `npm install --prefix ../codex-cli @openai/codex` puts it.
NEXT_TO_CHECKOUT = HERE.parent.parent / "codex-cli" / "node_modules" / ".bin" / "codex"
CODEX = (
    os.environ.get("SNAPSHOTTER_CODEX")
    or shutil.which("codex")
    or (str(NEXT_TO_CHECKOUT) if NEXT_TO_CHECKOUT.exists() else None)
)
# Inside the namespace every port is free; the provider's base_url names this one.
PORT = 18080
# A model of Codex's own catalogue, so that it offers apply_patch (as a freeform
# tool); with an unknown slug it falls back to metadata without apply_patch.
MODEL = "gpt-5.5"
KEY_ENV = "FAKE_OPENAI_KEY"

REPO = {
    "f.txt": "f as committed\n",
    "g.txt": "g as committed\n",
    "b.txt": "b as committed\n",
    "d.txt": "d as committed\n",
    "m.txt": "m as committed\n",
}
# Codex's hook events (0.169): the ones snapshotter wants, and Interrupt.
EVENTS = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SessionEnd",
    "Interrupt",
]
# SessionEnd and Interrupt hooks get 1 s unless told, at most 3 (Codex clamps).
SHORT_TIMEOUT_EVENTS = codex_dialect.DIALECT.budgeted


def trusted_hashes(hooks_json: Path) -> dict[str, str]:
    """Hook-state key (``PATH:LABEL:GROUP:HANDLER``) -> trusted hash, for each hook of the file
    (``dialects.codex.trusted_hash``; Codex's own ``hooks/list`` is the judge of it)."""
    config = json.loads(hooks_json.read_text())
    found = {}
    for event, groups in config["hooks"].items():
        for g, group in enumerate(groups):
            for h, handler in enumerate(group["hooks"]):
                key = f"{hooks_json}:{codex_dialect.LABELS[event]}:{g}:{h}"
                found[key] = codex_dialect.trusted_hash(event, group.get("matcher"), handler)
    return found


def toml_str(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string for these texts


def provider_config(home: Path) -> None:
    """``$CODEX_HOME/config.toml``: the fake API as the model provider (not init's business)."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f"model = {toml_str(MODEL)}\n"
        'model_provider = "fake"\n'
        "check_for_update_on_startup = false\n\n"
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "http://127.0.0.1:{PORT}/v1"\n'
        'wire_api = "responses"\n'
        f"env_key = {toml_str(KEY_ENV)}\n"
    )


TRUST_MARK = "# -- project and hook trust (trust_hooks rewrites from here) --\n"
# What ``snapshotter init codex --trust`` writes before its tables (agent_setup/codex_trust.py).
INIT_TRUST_MARK = "# trusted by snapshotter init codex --trust\n"


def trust_hooks(root: Path, home: Path) -> None:
    """Trust the project and every hook of its ``.codex/hooks.json``, in
    ``$CODEX_HOME/config.toml``, in place of what init (or an earlier call) wrote there:
    a TOML table twice is an error, and Codex then loads no hooks at all. Only for the
    wrapped hooks, whose command init does not take for its own."""
    config = home / ".codex" / "config.toml"
    base = config.read_text() if config.exists() else ""
    base = base.split(TRUST_MARK)[0].split(INIT_TRUST_MARK)[0]
    lines = [TRUST_MARK, f"[projects.{toml_str(str(root))}]", 'trust_level = "trusted"']
    for key, digest in trusted_hashes(root / ".codex" / "hooks.json").items():
        lines += [f"\n[hooks.state.{toml_str(key)}]", f"trusted_hash = {toml_str(digest)}"]
    config.write_text(base + "\n".join(lines) + "\n")


def init_codex(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The venv's ``snapshotter init codex -C ROOT ARGS`` as a process, the venv first on
    PATH (so the hooks say plain ``snapshotter hook``), ``CODEX_HOME`` the test's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODEX_"))}
    env |= {
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "PATH": os.pathsep.join([str(VENV_BIN), env.get("PATH", "")]),
    }
    return subprocess.run(
        [str(VENV_BIN / "snapshotter"), "init", "codex", "-C", str(root), *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def wire_codex(root: Path, home: Path) -> None:
    """``snapshotter init codex --trust``: ``.codex/hooks.json`` running ``snapshotter hook``
    on every event, the project and each hook trusted in ``$CODEX_HOME/config.toml`` (which
    must hold the provider already: init appends to it)."""
    config = home / ".codex" / "config.toml"
    provider = config.read_text()
    done = init_codex(root, home, "--trust")
    assert done.returncode == 0, f"init codex --trust failed: {done.stdout}{done.stderr}"
    hooks_json = root / ".codex" / "hooks.json"
    wired = json.loads(hooks_json.read_text())["hooks"]
    assert sorted(wired) == sorted(EVENTS), f"init wires other events: {list(wired)}"
    for event, groups in wired.items():
        matcher = "*" if event in {"PreToolUse", "PostToolUse"} else None
        timeout = 3 if event in SHORT_TIMEOUT_EVENTS else 60
        assert groups == [
            {
                **({"matcher": matcher} if matcher else {}),
                "hooks": [{"type": "command", "command": COMMAND, "timeout": timeout}],
            }
        ], f"{event}: {groups}"
    text = config.read_text()
    assert text.startswith(provider), "init appends to the provider's config, keeps it"
    written = tomllib.loads(text)
    assert written["projects"] == {str(root): {"trust_level": "trusted"}}, written
    trusted = {k: v["trusted_hash"] for k, v in written["hooks"]["state"].items()}
    assert trusted == trusted_hashes(hooks_json), "init trusts each hook with Codex's hash"


COMMAND = "snapshotter hook --arg dialect=codex"  # what init writes


def wrap_hooks(root: Path, home: Path, log: Path, cut_off: frozenset[str] = frozenset()) -> None:
    """Every hook's payload appended to ``log`` too, before ``snapshotter hook`` reads it;
    trusted again (the hash covers the command). The hooks of ``cut_off`` events only log
    their payload: as if Codex had killed ``snapshotter hook`` before it did anything."""
    path = root / ".codex" / "hooks.json"
    config = json.loads(path.read_text())
    tee = f"sh -c 'tee -a {shlex.quote(str(log))} | snapshotter hook'"
    logged = f"sh -c 'tee -a {shlex.quote(str(log))} >/dev/null'"
    for event, groups in config["hooks"].items():
        for group in groups:
            for hook in group["hooks"]:
                hook["command"] = logged if event in cut_off else tee
    path.write_text(json.dumps(config, indent=2) + "\n")
    trust_hooks(root, home)


def initialised_repo(tmp_path: Path, home: Path, files: dict[str, str] = REPO) -> Path:
    """A committed repository with the fake provider configured, wired by init alone."""
    root = make_repo(tmp_path / "repo", files)
    provider_config(home)
    wire_codex(root, home)
    return root


def wired_repo(
    tmp_path: Path,
    home: Path,
    cut_off: frozenset[str] = frozenset(),
    files: dict[str, str] = REPO,
) -> tuple[Path, Path]:
    """A committed repository whose hooks are wired and wrapped: (root, payload log)."""
    root = initialised_repo(tmp_path, home, files)
    log = tmp_path / "hooks.jsonl"
    wrap_hooks(root, home, log, cut_off)
    return root, log


@pytest.fixture(scope="module")
def codex() -> str:
    if CODEX is None:
        pytest.skip("the codex CLI is not installed (npm install -g @openai/codex)")
    why = _unshare_works()
    if why is not None:
        pytest.skip(why)
    return CODEX


def client_env(codex: str, home: Path) -> dict[str, str]:
    """This test's environment (its HOME), CODEX_HOME in it, this venv's snapshotter first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODEX_"))}
    path = os.pathsep.join([str(VENV_BIN), str(Path(codex).parent), env.get("PATH", "")])
    return {**env, "PATH": path, "CODEX_HOME": str(home / ".codex"), KEY_ENV: "test"}


# Codex's own sandbox (bubblewrap/Landlock) is not what is tested, and the
# namespaces already keep the tools in; no approval prompts in exec mode.
EXEC_FLAGS = ["--dangerously-bypass-approvals-and-sandbox", "--color", "never"]


def drive(
    tmp_path: Path, codex: str, root: Path, script: dict[str, Any], runs: list[dict[str, Any]]
) -> dict[str, Any]:
    """Each run is ``codex exec PROMPT`` in ``root`` (the first starts the session, the rest
    ``codex exec resume --last``), against the fake API, all in one namespace."""
    work = tmp_path / "client"
    work.mkdir(exist_ok=True)
    env = client_env(codex, Path(os.environ["HOME"]))
    spec_runs = []
    for index, run in enumerate(runs):
        if index == 0:
            argv = [codex, "exec", *EXEC_FLAGS, run["prompt"]]
        else:
            argv = [codex, "exec", "resume", "--last", *EXEC_FLAGS[:1], run["prompt"]]
        spec_runs.append({"argv": argv, "cwd": str(root), "env": env, "timeout": 90, **run})
    summary = run_fake(
        FAKE,
        work,
        {key: [a["answer"] for a in answers] for key, answers in script.items()},
        spec_runs,
        port=PORT,
    )
    return summary


# The answers of the fake API, by the key in the prompt; each with what it does to
# the tree ("edits", as fixtures/sessions/*.json: write or delete), which the
# recorded fixtures carry between the tool's PreToolUse and PostToolUse.
PATCH = """*** Begin Patch
*** Update File: g.txt
@@
-g as committed
+g patched
*** Add File: new.txt
+new by apply_patch
*** Delete File: d.txt
*** Update File: m.txt
*** Move to: moved.txt
@@
-m as committed
+m moved
*** End Patch
"""
SHELL_TURN = {
    "turn-s": [
        {"answer": {"shell": "rm b.txt"}, "edits": [{"op": "delete", "path": "b.txt"}]},
        {
            "answer": {"shell": "sed -i 's/as committed/by sed/' f.txt"},
            "edits": [{"op": "write", "path": "f.txt", "content": "f by sed\n"}],
        },
        {
            "answer": {"shell": "echo x > e.txt"},
            "edits": [{"op": "write", "path": "e.txt", "content": "x\n"}],
        },
        {"answer": {"text": "Shell edits done."}},
    ]
}
PATCH_TURN = {
    "turn-p": [
        {
            "answer": {"patch": PATCH},
            "edits": [
                {"op": "write", "path": "g.txt", "content": "g patched\n"},
                {"op": "write", "path": "new.txt", "content": "new by apply_patch\n"},
                {"op": "delete", "path": "d.txt"},
                {"op": "delete", "path": "m.txt"},
                {"op": "write", "path": "moved.txt", "content": "m moved\n"},
            ],
        },
        {"answer": {"text": "Patched."}},
    ]
}
SLOW_TURN = {
    "turn-i": [
        {"answer": {"shell": "rm b.txt; sleep 30"}, "edits": [{"op": "delete", "path": "b.txt"}]},
        {"answer": {"text": "Removed b."}},
    ]
}
PROMPTS = {
    "turn-s": "[turn-s] Remove b.txt, edit f.txt with sed, write e.txt",
    "turn-p": "[turn-p] Patch g.txt, add new.txt, delete d.txt, move m.txt",
    "turn-i": "[turn-i] Remove b.txt",
}


def tree(root: Path) -> dict[str, str]:
    """The worktree's files (not .git, not .codex): path -> text."""
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] not in {".git", ".codex"}
    }


def after_edits(files: dict[str, str], *turns: dict[str, Any]) -> dict[str, str]:
    result = dict(files)
    for turn in turns:
        for answers in turn.values():
            for answer in answers:
                for edit in answer.get("edits", []):
                    if edit["op"] == "write":
                        result[edit["path"]] = edit["content"]
                    else:
                        result.pop(edit["path"], None)
    return result


def names(payloads: list[dict[str, Any]]) -> list[str]:
    return [str(p["hook_event_name"]) for p in payloads]


def hooks_list(codex: str, root: Path, home: Path) -> dict[str, Any]:
    """What Codex's app-server answers ``hooks/list`` (JSON-RPC on stdio) for ``root``."""
    requests = [
        {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "1"}}},
        {"method": "initialized"},
        {"id": 2, "method": "hooks/list", "params": {"cwds": [str(root)]}},
    ]
    proc = subprocess.Popen(
        [codex, "app-server"],
        cwd=root,
        env=client_env(codex, home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
    proc.stdin.flush()
    answer: dict[str, Any] = {}
    try:
        for line in proc.stdout:
            message = json.loads(line)
            if message.get("id") == 2:
                answer = message
                break
    finally:
        proc.kill()
        proc.wait()
    (listed_cwd,) = answer["result"]["data"]
    found: dict[str, Any] = listed_cwd
    return found


def test_codex_agrees_with_our_trusted_hashes(tmp_path: Path, codex: str, hermetic: Path) -> None:
    """After ``snapshotter init codex --trust`` alone, Codex's own ``hooks/list`` (app-server)
    sees every hook init wrote as trusted and enabled, its current hash the one init wrote
    (and ``trusted_hashes`` computes); no warnings (a table twice would be one)."""
    root = initialised_repo(tmp_path, hermetic)
    listed_cwd = hooks_list(codex, root, hermetic)
    hooks = {h["key"]: h for h in listed_cwd["hooks"]}
    config = tomllib.loads((hermetic / ".codex" / "config.toml").read_text())
    by_init = {k: v["trusted_hash"] for k, v in config["hooks"]["state"].items()}
    ours = trusted_hashes(root / ".codex" / "hooks.json")
    print(
        "\n[realclient] hooks/list: "
        + ", ".join(f"{k.rsplit(':', 3)[1]} {h['trustStatus']}" for k, h in hooks.items())
    )
    assert len(by_init) == len(EVENTS) and by_init == ours
    assert set(hooks) == set(by_init), f"Codex lists other hooks: {sorted(hooks)}"
    for key, hook in hooks.items():
        assert hook["currentHash"] == by_init[key], f"{key}: Codex hashes {hook}"
        assert hook["trustStatus"] == "trusted" and hook["enabled"], hook
    assert not listed_cwd.get("warnings"), listed_cwd["warnings"]

    # Running init again changes nothing: no table is written twice.
    before = (hermetic / ".codex" / "config.toml").read_bytes()
    done = init_codex(root, hermetic, "--trust")
    assert done.returncode == 0, done.stderr
    assert (hermetic / ".codex" / "config.toml").read_bytes() == before


def test_the_wrapped_hooks_are_trusted_too(tmp_path: Path, codex: str, hermetic: Path) -> None:
    """The tee-wrapped hooks of the other tests, re-trusted in place of init's tables."""
    root, _ = wired_repo(tmp_path, hermetic)
    listed_cwd = hooks_list(codex, root, hermetic)
    ours = trusted_hashes(root / ".codex" / "hooks.json")
    assert {h["key"]: h["currentHash"] for h in listed_cwd["hooks"]} == ours
    assert all(h["trustStatus"] == "trusted" for h in listed_cwd["hooks"]), listed_cwd
    assert not listed_cwd.get("warnings"), listed_cwd["warnings"]


def test_shell_turn_then_apply_patch_turn(tmp_path: Path, codex: str, hermetic: Path) -> None:
    """Turn 1 runs three shell commands, turn 2 (``exec resume``) one apply_patch; then undo."""
    root, log = wired_repo(tmp_path, hermetic)
    runs = [{"prompt": PROMPTS["turn-s"]}, {"prompt": PROMPTS["turn-p"]}]
    summary = drive(tmp_path, codex, root, {**SHELL_TURN, **PATCH_TURN}, runs)
    succeeded(summary, tmp_path, "codex")
    served = [(k, s) for k, s in summary["served"]]
    assert served == [("turn-s", i) for i in range(4)] + [("turn-p", i) for i in range(2)]
    assert tree(root) == after_edits(REPO, SHELL_TURN, PATCH_TURN), "the scripted tools ran"

    payloads = read_payloads(log)
    tool = ["PreToolUse", "PostToolUse"]
    turn1 = ["SessionStart", "UserPromptSubmit", *tool * 3, "Stop", "SessionEnd"]
    turn2 = ["SessionStart", "UserPromptSubmit", *tool, "Stop", "SessionEnd"]
    assert names(payloads) == turn1 + turn2, names(payloads)
    pre = [p for p in payloads if p["hook_event_name"] == "PreToolUse"]
    assert [(p["tool_name"], p["tool_input"]) for p in pre] == [
        ("Bash", {"command": "rm b.txt"}),
        ("Bash", {"command": "sed -i 's/as committed/by sed/' f.txt"}),
        ("Bash", {"command": "echo x > e.txt"}),
        ("apply_patch", {"command": PATCH}),
    ]
    assert [p["tool_use_id"] for p in pre] == [
        "call_turn-s_00",
        "call_turn-s_01",
        "call_turn-s_02",
        "call_turn-p_00",
    ], "tool_use_id is the model's call_id"
    assert len({p["session_id"] for p in payloads}) == 1, "resume keeps the session id"

    cps = listed(root)
    turns = [cp for cp in cps if cp["kind"] == "turn"]
    print(f"[realclient] recorded: {[(t['label'], files_of(t)) for t in turns]}")
    assert [t["prompt"] for t in turns] == [PROMPTS["turn-s"], PROMPTS["turn-p"]], cps
    patched = {"g.txt": "modified", "new.txt": "added", "d.txt": "deleted"}
    patched |= {"m.txt": "deleted", "moved.txt": "added"}
    assert files_of(turns[0]) == {"b.txt": "deleted", "f.txt": "modified", "e.txt": "added"}
    assert files_of(turns[1]) == patched, turns[1]
    tools = [
        [(t["tool_name"], t["command"], files_of(t)) for t in cps if t["parent"] == turn["id"]]
        for turn in turns
    ]
    assert tools == [
        [
            ("Bash", "rm b.txt", {"b.txt": "deleted"}),
            ("Bash", "sed -i 's/as committed/by sed/' f.txt", {"f.txt": "modified"}),
            ("Bash", "echo x > e.txt", {"e.txt": "added"}),
        ],
        [("apply_patch", PATCH, patched)],
    ], tools
    # apply_patch's input is the patch: the tool names every file it touches (both sides
    # of the move), in the patch's order, and is labelled by them, not by the patch text.
    (patch_tool,) = [t for t in cps if t["parent"] == turns[1]["id"]]
    named = patch_tool["named_paths"]
    assert sorted(named) == ["d.txt", "g.txt", "m.txt", "moved.txt", "new.txt"], patch_tool
    assert patch_tool["label"] == f"apply_patch {named[0]} (+4)", patch_tool
    assert [t["label"] for t in turns] == [PROMPTS["turn-s"], PROMPTS["turn-p"]]
    assert [t["reason"] for t in turns] == ["turn_end", "turn_end"], turns

    committed = {p: t.encode() for p, t in REPO.items()}
    patched_tree = tree(root)
    cli_ok(root, "undo")
    assert tree(root) == after_edits(REPO, SHELL_TURN), "undo takes back the patch turn"
    cli_ok(root, "undo")
    assert tree(root) == REPO, "a second undo takes back the shell turn"
    assert {p: (root / p).read_bytes() for p in REPO} == committed, "byte for byte"
    cli_ok(root, "redo")
    assert tree(root) == after_edits(REPO, SHELL_TURN)
    cli_ok(root, "redo")
    assert tree(root) == patched_tree, "redo puts the patch back, the move included"
    cli_ok(root, "reset", "--original")
    assert tree(root) == REPO, "reset --original: every file as committed, none added"
    assert {p: (root / p).read_bytes() for p in REPO} == committed
    no_hook_failures()


@pytest.mark.parametrize(
    "cut_off", [frozenset(), frozenset({"SessionEnd"})], ids=["session-end", "no-session-end"]
)
def test_sigint_during_a_slow_shell_tool(
    tmp_path: Path, codex: str, hermetic: Path, cut_off: frozenset[str]
) -> None:
    """``rm b.txt; sleep 30``, SIGINT to ``codex exec`` while it sleeps: Codex sends
    Interrupt, which ends the turn as interrupted; then SessionEnd, whose hook Codex may
    cut off after 3 s (``no-session-end``: it does nothing) and which the turn does not need."""
    root, log = wired_repo(tmp_path, hermetic, cut_off)
    interrupt = {"gone": str(root / "b.txt"), "signal": "SIGINT", "after": 1.0}
    summary = drive(
        tmp_path, codex, root, SLOW_TURN, [{"prompt": PROMPTS["turn-i"], "interrupt": interrupt}]
    )
    assert summary["runs"][0]["note"] == "sent SIGINT", summary
    assert summary["runs"][0]["seconds"] < 25, "codex stopped before the tool's sleep ended"
    assert not (root / "b.txt").exists()
    got = names(read_payloads(log))
    print(f"[realclient] SIGINT: codex sent {got}")
    assert got == ["SessionStart", "UserPromptSubmit", "PreToolUse", "Interrupt", "SessionEnd"]

    # Before any command (each would close a turn left open): the hooks alone recorded it.
    state = load_state(hermetic / "data")
    (recorded,) = [cp for cp in state["checkpoints"] if cp["kind"] == "turn"]
    assert recorded["reason"] == "interrupted", recorded
    assert recorded["label"] == f"interrupted: {PROMPTS['turn-i']}", recorded
    assert all(s["turn"] is None for s in state["sessions"].values()), state["sessions"]

    (turn,) = [cp for cp in listed(root) if cp["kind"] == "turn"]
    assert files_of(turn) == {"b.txt": "deleted"} and not turn["undone"], turn
    assert turn["label"] == f"interrupted: {PROMPTS['turn-i']}", turn
    out = cli_ok(root, "undo")
    assert (root / "b.txt").read_bytes() == REPO["b.txt"].encode(), f"undo restores b.txt: {out}"
    assert tree(root) == REPO
    cli_ok(root, "redo")
    assert not (root / "b.txt").exists(), "redo removes b.txt again"
    cli_ok(root, "reset", "--original")
    assert {p: (root / p).read_bytes() for p in REPO} == {p: t.encode() for p, t in REPO.items()}
    assert tree(root) == REPO
    no_hook_failures()


MIXED_REPO = {
    "a.txt": "a as committed\n",
    "f.txt": "f as committed\n",
    "sub/keep.txt": "keep as committed\n",
}
F_PATCH = """*** Begin Patch
*** Update File: f.txt
@@
-f as committed
+f patched
*** End Patch
"""
MIXED_TURN = {
    "turn-m": [
        {
            "answer": {"shell": "sed -i 's/a as committed/a by sed/' a.txt"},
            "edits": [{"op": "write", "path": "a.txt", "content": "a by sed\n"}],
        },
        {
            "answer": {"shell": "cd sub && echo deep > deep.txt"},
            "edits": [{"op": "write", "path": "sub/deep.txt", "content": "deep\n"}],
        },
        {"answer": {"shell": "cat missing.txt"}, "edits": []},
        {
            "answer": {"patch": F_PATCH},
            "edits": [{"op": "write", "path": "f.txt", "content": "f patched\n"}],
        },
        {"answer": {"text": "Mixed edits done."}},
    ]
}
MIXED_PROMPT = "[turn-m] sed a.txt, write sub/deep.txt from sub, cat a missing file, patch f.txt"


def tree_bytes(root: Path) -> dict[str, bytes]:
    """The worktree's files (not .git, not .codex) as bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] not in {".git", ".codex"}
    }


def test_sed_a_subdirectory_a_failing_command_and_apply_patch_in_one_turn(
    tmp_path: Path, codex: str, hermetic: Path
) -> None:
    """One prompt: ``sed -i`` on a.txt, ``cd sub && echo deep > deep.txt``, ``cat
    missing.txt`` (exits non-zero), an apply_patch of f.txt. One turn with its tools
    nested, its files exactly those three; undo, redo, reset --original byte for byte."""
    root, log = wired_repo(tmp_path, hermetic, files=MIXED_REPO)
    committed = {p: t.encode() for p, t in MIXED_REPO.items()}
    assert tree_bytes(root) == committed
    summary = drive(tmp_path, codex, root, MIXED_TURN, [{"prompt": MIXED_PROMPT}])
    succeeded(summary, tmp_path, "codex")
    assert [(k, s) for k, s in summary["served"]] == [("turn-m", i) for i in range(5)]
    agent = {p: t.encode() for p, t in after_edits(MIXED_REPO, MIXED_TURN).items()}
    assert tree_bytes(root) == agent, "the scripted tools ran"

    payloads = read_payloads(log)
    print(f"[realclient] mixed: codex sent {names(payloads)}")
    tool = ["PreToolUse", "PostToolUse"]
    assert names(payloads) == ["SessionStart", "UserPromptSubmit", *tool * 4, "Stop", "SessionEnd"]
    commands = [
        "sed -i 's/a as committed/a by sed/' a.txt",
        "cd sub && echo deep > deep.txt",
        "cat missing.txt",
        F_PATCH,
    ]
    expected = [
        (name, command, f"call_turn-m_{i:02d}")
        for i, (name, command) in enumerate(
            zip(["Bash", "Bash", "Bash", "apply_patch"], commands, strict=True)
        )
    ]
    for event in tool:
        sent = [p for p in payloads if p["hook_event_name"] == event]
        got = [(p["tool_name"], p["tool_input"]["command"], p["tool_use_id"]) for p in sent]
        assert got == expected, f"{event}: {sent}"
    # The failing command gets its PostToolUse as the others: its output (stderr) is the
    # tool_response, without the exit code, which only the model is told.
    (failed,) = [p for p in payloads if p["hook_event_name"] == "PostToolUse"][2:3]
    print(f"[realclient] cat missing.txt: PostToolUse tool_response {failed['tool_response']!r}")
    assert "missing.txt" in str(failed["tool_response"]), failed
    requests = [json.loads(line) for line in (tmp_path / "client" / "requests.jsonl").open()]
    told = next(
        r["outputs"]["call_turn-m_02"] for r in requests if "call_turn-m_02" in r.get("outputs", {})
    )
    print(f"[realclient] cat missing.txt: the model was told {told!r}")
    assert "code 1" in told, told

    cps = listed(root)
    (turn,) = [cp for cp in cps if cp["kind"] == "turn"]
    assert turn["prompt"] == MIXED_PROMPT and turn["reason"] == "turn_end", turn
    assert files_of(turn) == {"a.txt": "modified", "sub/deep.txt": "added", "f.txt": "modified"}
    # Each tool that changed the tree is a checkpoint nested in the turn; the failing
    # command, which changed nothing, is none.
    assert [cp["id"] for cp in cps if cp["kind"] != "turn"] == [
        cp["id"] for cp in cps if cp["parent"] == turn["id"]
    ], cps
    tools = [(t["tool_name"], t["command"], files_of(t)) for t in cps if t["parent"] == turn["id"]]
    print(f"[realclient] mixed turn: {files_of(turn)}, tools {[t[:2] for t in tools]}")
    assert tools == [
        ("Bash", commands[0], {"a.txt": "modified"}),
        ("Bash", commands[1], {"sub/deep.txt": "added"}),
        ("apply_patch", F_PATCH, {"f.txt": "modified"}),
    ], tools

    cli_ok(root, "undo")
    assert tree_bytes(root) == committed, "undo: the committed bytes"
    cli_ok(root, "redo")
    assert tree_bytes(root) == agent, "redo: the agent's bytes"
    cli_ok(root, "reset", "--original")
    assert tree_bytes(root) == committed, "reset --original: the committed bytes"
    no_hook_failures()


def as_steps(payloads: list[dict[str, Any]], script: dict[str, Any]) -> list[dict[str, Any]]:
    """Events, each PreToolUse followed by what its tool did to the tree ("edits")."""
    by_call = {
        f"call_{key}_{step:02d}": answer.get("edits", [])
        for key, answers in script.items()
        for step, answer in enumerate(answers)
    }
    steps: list[dict[str, Any]] = []
    for event in payloads:
        steps.append({"event": event})
        if event["hook_event_name"] == "PreToolUse":
            steps.append({"edits": by_call[event["tool_use_id"]]})
    return steps


def shape(steps: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """What must not drift: each event's name and field names, in order."""
    return [(s["event"]["hook_event_name"], sorted(s["event"])) for s in steps if "event" in s]


def record_or_compare(name: str, steps: list[dict[str, Any]], how: str, codex: str) -> None:
    path = FIXTURES / name
    if os.environ.get("SNAPSHOTTER_RECORD_FIXTURES") == "1":
        version = subprocess.run([codex, "--version"], capture_output=True, text=True, check=False)
        recorded = {
            "client": version.stdout.strip(),
            "how": how,
            "repo": REPO,
            "steps": steps,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(recorded, indent=1) + "\n")
    stored = json.loads(path.read_text())
    assert shape(steps) == shape(stored["steps"]), (
        f"Codex now sends other events or fields than {name} holds (recorded from "
        f"{stored['client']}); re-record with SNAPSHOTTER_RECORD_FIXTURES=1"
    )


def test_records_what_the_client_sends_to_the_hooks(
    tmp_path: Path, codex: str, hermetic: Path
) -> None:
    """The payloads of a real session (two turns), and of one stopped by SIGINT, match the
    shape of the recorded fixtures (or are recorded)."""
    root, log = wired_repo(tmp_path / "two", hermetic)
    runs = [{"prompt": PROMPTS["turn-s"]}, {"prompt": PROMPTS["turn-p"]}]
    script = {**SHELL_TURN, **PATCH_TURN}
    drive(tmp_path / "two", codex, root, script, runs)
    steps = as_steps(anonymised(read_payloads(log), root, hermetic), script)
    how = (
        f"codex exec {' '.join(EXEC_FLAGS)} PROMPT, then codex exec resume --last PROMPT; "
        f"model {MODEL} on a fake Responses API; hooks from .codex/hooks.json, all trusted"
    )
    record_or_compare("session.json", steps, how, codex)

    root, log = wired_repo(tmp_path / "int", hermetic)
    interrupt = {"gone": str(root / "b.txt"), "signal": "SIGINT", "after": 1.0}
    drive(
        tmp_path / "int",
        codex,
        root,
        SLOW_TURN,
        [{"prompt": PROMPTS["turn-i"], "interrupt": interrupt}],
    )
    steps = as_steps(anonymised(read_payloads(log), root, hermetic), SLOW_TURN)
    how = "codex exec PROMPT (as session.json); SIGINT to codex 1 s into `rm b.txt; sleep 30`"
    record_or_compare("interrupted.json", steps, how, codex)
