"""End to end: the installed ``snapshotter`` console script in real processes.

Each event is its own ``snapshotter hook`` process, as an agent runtime runs
it, so these tests also prove that pending state and checkpoints persist
between processes (SPEC §4). The README tests wire hooks exactly as README.md
tells users to, and replay recorded sessions through those commands.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import Run, fast_and_full, hook_ok, run_cli, run_hook, write
from builders import listed as listed_by

from snapshotter.cli.replay import build_repo, load_recipe, load_session, replay

README = Path(__file__).resolve().parents[2] / "README.md"


def script() -> Path:
    """The console script installed next to this interpreter (the venv's)."""
    beside = Path(sys.executable).with_name("snapshotter")
    if beside.exists():
        return beside
    found = shutil.which("snapshotter")
    assert found, "the snapshotter console script is not installed (pip install -e .)"
    return Path(found)


def env() -> dict[str, str]:
    """The hermetic environment, with the script's directory first on PATH."""
    return {**os.environ, "PATH": f"{script().parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def console() -> tuple[str]:
    """The command line that runs the console script."""
    return (str(script()),)


def run(*args: Any, cwd: Path | None = None) -> Run:
    return Run.of(run_cli(*args, cwd=cwd, env=env(), command=console()))


def hook(event: dict[str, Any]) -> None:
    hook_ok(event, env=env(), command=console())


def listed(root: Path) -> list[dict[str, Any]]:
    return listed_by(root, command=console())


def shape(cps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Checkpoints in the form recorded sessions' ``expect`` lists use."""
    return [
        {
            "kind": c["kind"],
            "label": c["label"],
            "parent": c["parent"],
            "files": {f["path"]: f["status"] for f in c["files"]},
        }
        for c in cps
    ]


# -- hook, list, undo, redo, reset ---------------------------------------------------


def test_hook_list_undo_redo_reset_through_the_console_script(repo: Path) -> None:
    event = {"session_id": "e2e", "cwd": str(repo)}
    hook({**event, "hook_event_name": "turn_start"})
    write(repo, "src/app.py", "print('agent')\n")
    write(repo, "src/new.py", "NEW = 1\n")
    hook({**event, "hook_event_name": "turn_end", "reason": "normal"})

    cps = listed(repo)
    assert shape(cps) == [
        {
            "kind": "turn",
            "label": "normal",
            "parent": None,
            "files": {"src/app.py": "modified", "src/new.py": "added"},
        }
    ], f"the two hook processes recorded one turn: {cps}"
    undo = run("undo", "-C", repo, "--json")
    assert undo.code == 0, f"undo failed: {undo.err}"
    assert json.loads(undo.out) == {
        "checkpoint": [1],
        "restored": ["src/app.py"],
        "removed": ["src/new.py"],
        "skipped": [],
        "not_held": [],
        "dry_run": False,
    }, undo.out
    assert (repo / "src/app.py").read_text() == "print('hi')\n", "undo restored the file"
    assert not (repo / "src/new.py").exists(), "undo removed the added file"
    assert listed(repo)[0]["undone"] is True, "list shows the undone mark"

    redo = run("redo", "-C", repo)
    assert redo.code == 0 and "redid checkpoint 1" in redo.out, f"redo: {redo.out}{redo.err}"
    assert (repo / "src/new.py").read_text() == "NEW = 1\n", "redo put the file back"

    write(repo, "src/new.py", "user edit\n")
    refused = run("reset", "--original", "-C", repo)
    assert refused.code == 4, f"reset over a user edit exits 4, got {refused.code}"
    refused.one_line_error("src/new.py")
    forced = run("reset", "--original", "-C", repo, "--force", "--json")
    assert forced.code == 0, f"reset --force failed: {forced.err}"
    assert json.loads(forced.out)["checkpoint"] == [1], forced.out
    assert not (repo / "src/new.py").exists(), "reset --original went back to the original"
    again = run("undo", "-C", repo)
    assert again.code == 3, f"nothing left to undo exits 3, got {again.code}"
    again.one_line_error()


def test_error_exit_codes_through_the_console_script(repo: Path, tmp_path: Path) -> None:
    outside = run("list", "-C", tmp_path)
    assert outside.code == 1, f"outside a worktree exits 1, got {outside.code}"
    outside.one_line_error("not inside a git worktree")
    nothing = run("undo", cwd=repo)
    assert nothing.code == 3, f"no store yet: undo exits 3, got {nothing.code}"
    nothing.one_line_error()
    usage = run("reset", "-C", repo)
    assert usage.code == 2, f"reset with neither ID nor --original exits 2, got {usage.code}"
    assert "Traceback" not in usage.err, usage.err
    garbage = run_hook(b"{not json", env=env(), command=console())
    assert garbage.returncode == 0, f"the hook exits 0 even on garbage, got {garbage.returncode}"
    assert b"Traceback" not in garbage.stderr, garbage.stderr


def test_help_through_the_console_script() -> None:
    done = run("--help")
    assert done.code == 0 and "Usage: snapshotter" in done.out, f"--help: {done.out}{done.err}"
    for name in ("hook", "list", "undo", "redo", "reset", "demo"):
        assert name in done.out, f"--help lists {name}: {done.out}"


# -- demo ----------------------------------------------------------------------------


# Fast: its hook events through the resident hook server, as a user's demo runs
# them; full: each event handled in its own process (no server), as on Windows.
@pytest.mark.parametrize("server", fast_and_full("1", "0"))
def test_demo_runs_and_shows_list_diff_undo_redo(
    tmp_path: Path, data_dir: Path, server: str
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    demo_env = {**env(), "TMPDIR": str(scratch), "SNAPSHOTTER_HOOK_SERVER": server}
    done = subprocess.run(
        [str(script()), "demo"],
        capture_output=True,
        text=True,
        env=demo_env,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, f"demo failed ({done.returncode}): {done.stderr}"
    assert "Traceback" not in done.stderr, f"demo raised: {done.stderr}"
    for command in ("list", "diff --stat", "diff", "undo", "redo"):
        assert f"$ snapshotter {command}\n" in done.stdout, f"demo runs {command}: {done.stdout}"
    for shown in ("├", "diff --git", "undid checkpoint", "(undone)", "redid checkpoint"):
        assert shown in done.stdout, f"demo output shows {shown!r}: {done.stdout}"
    assert "hook events sent" in done.stdout, f"demo goes through the hook: {done.stdout}"
    assert "+added ~modified -deleted" in done.stdout, "the FILES legend where it first shows"
    assert not done.stdout.rstrip().endswith("True"), f"no stray `...: True`: {done.stdout}"
    assert not list(scratch.iterdir()), "demo removes its throwaway repository"
    assert not data_dir.exists(), "demo never touches the user's data directory"


def test_demo_run_in_a_directory_with_a_snapshotter_package_runs_its_own_code(
    tmp_path: Path,
) -> None:
    """README's first command runs the demo in a clone of this repository: its hooks
    and commands must run the installed snapshotter, not the ``snapshotter/`` there
    (the hook server they started was left running under another name)."""
    decoy = tmp_path / "clone"
    (decoy / "snapshotter").mkdir(parents=True)
    marker = tmp_path / "decoy-imported"
    (decoy / "snapshotter" / "__init__.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nraise SystemExit(1)\n"
    )
    (tmp_path / "tmp").mkdir()
    done = subprocess.run(
        [str(script()), "demo"],
        capture_output=True,
        text=True,
        env={**env(), "TMPDIR": str(tmp_path / "tmp"), "SNAPSHOTTER_HOOK_SERVER": "1"},
        cwd=decoy,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0 and "undid checkpoint" in done.stdout, done.stdout + done.stderr
    assert not marker.exists(), "the demo's processes imported the directory's snapshotter/"


# -- README wiring --------------------------------------------------------------------
# Tests named test_readme_* check README.md's content (select them with -k readme):
# the snippets users copy must parse and must record what the recordings expect.


def fenced(text: str, lang: str, needle: str) -> str:
    found: list[str] = re.findall(rf"^```{lang}\n(.*?)^```", text, re.S | re.M)
    blocks = [b for b in found if needle in b]
    assert len(blocks) == 1, f"README.md needs exactly one ```{lang} block with {needle!r}"
    return blocks[0]


def parse_yaml(text: str) -> Any:
    """The block-style YAML subset the README's hook config uses.

    Mappings, sequences (``- item`` and ``- key: value``) and scalars; anything
    else (flow collections, block scalars, anchors) raises, so a README change
    that outgrows this reader fails loudly instead of being misread.
    """
    lines: list[list[Any]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped and not stripped.startswith("#"):
            if "\t" in raw[: len(raw) - len(raw.lstrip())]:
                raise ValueError(f"line {number}: tab indentation")
            lines.append([len(raw) - len(raw.lstrip(" ")), stripped, number])
    if not lines:
        return None
    value, pos = _yaml_block(lines, 0, lines[0][0])
    if pos != len(lines):
        raise ValueError(f"line {lines[pos][2]}: unexpected indentation")
    return value


_KEY = re.compile(r"""^("(?:[^"\\]|\\.)*"|'[^']*'|[^\s"'\-\[{][^:]*?)\s*:(?:\s+(.*))?$""")


def _yaml_block(lines: list[list[Any]], pos: int, indent: int) -> tuple[Any, int]:
    if lines[pos][1] == "-" or lines[pos][1].startswith("- "):
        return _yaml_seq(lines, pos, indent)
    return _yaml_map(lines, pos, indent)


def _yaml_map(lines: list[list[Any]], pos: int, indent: int) -> tuple[dict[str, Any], int]:
    result: dict[str, Any] = {}
    while pos < len(lines) and lines[pos][0] == indent and not lines[pos][1].startswith("-"):
        match = _KEY.match(lines[pos][1])
        if match is None:
            raise ValueError(f"line {lines[pos][2]}: not a 'key: value' line")
        key, rest = _yaml_scalar(match.group(1)), (match.group(2) or "").strip()
        if key in result:
            raise ValueError(f"line {lines[pos][2]}: duplicate key {key!r}")
        pos += 1
        nested = pos < len(lines) and (
            lines[pos][0] > indent or (lines[pos][0] == indent and lines[pos][1].startswith("- "))
        )
        if rest:
            result[key] = _yaml_scalar(rest)
        elif nested:
            result[key], pos = _yaml_block(lines, pos, lines[pos][0])
        else:
            result[key] = None
    if pos < len(lines) and lines[pos][0] > indent:
        raise ValueError(f"line {lines[pos][2]}: unexpected indentation")
    return result, pos


def _yaml_seq(lines: list[list[Any]], pos: int, indent: int) -> tuple[list[Any], int]:
    items: list[Any] = []
    while pos < len(lines) and lines[pos][0] == indent and lines[pos][1].startswith("-"):
        rest = lines[pos][1][1:]
        item = rest.lstrip()
        if not item:
            pos += 1
            if pos >= len(lines) or lines[pos][0] <= indent:
                raise ValueError(f"line {lines[pos - 1][2]}: empty list item")
            value, pos = _yaml_block(lines, pos, lines[pos][0])
        elif _KEY.match(item):  # "- key: value" opens a mapping indented past the dash
            lines[pos] = [indent + 1 + len(rest) - len(item), item, lines[pos][2]]
            value, pos = _yaml_map(lines, pos, lines[pos][0])
        else:
            value, pos = _yaml_scalar(item), pos + 1
        items.append(value)
    return items, pos


def _yaml_scalar(text: str) -> Any:
    if text.startswith('"'):
        return json.loads(text)
    if text.startswith("'"):
        if not text.endswith("'") or len(text) < 2:
            raise ValueError(f"unterminated string {text!r}")
        return text[1:-1].replace("''", "'")
    text = re.sub(r"\s+#.*$", "", text)
    if text[:1] in ("|", ">", "[", "{", "&", "*", "!"):
        raise ValueError(f"YAML construct not supported by this reader: {text!r}")
    plain = {"true": True, "false": False, "null": None, "~": None}
    if text in plain:
        return plain[text]
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def commands_for(config: dict[str, Any], event: str, tool_name: str) -> list[str]:
    """The command hooks a runtime runs for ``event`` (docker-agent and Claude Code alike)."""
    found: list[str] = []
    for entry in config.get(event) or []:
        if "hooks" in entry:  # a matcher group
            matcher = entry.get("matcher") or "*"
            if matcher != "*" and re.fullmatch(matcher, tool_name) is None:
                continue
            hooks = entry["hooks"]
        else:
            hooks = [entry]
        found.extend(h["command"] for h in hooks if h.get("type", "command") == "command")
    return found


def replay_through(
    config: dict[str, Any], session: dict[str, Any], root: Path, server: str = "0"
) -> int:
    """Play ``session`` on ``root``, running the configured commands for each event
    (``server``: SNAPSHOTTER_HOOK_SERVER, "1" as users run them, "0" as the tests)."""
    ran = 0
    command_env = {**env(), "SNAPSHOTTER_HOOK_SERVER": server}

    def send(event: dict[str, Any]) -> None:
        nonlocal ran
        for command in commands_for(config, event["hook_event_name"], event.get("tool_name", "")):
            done = subprocess.run(
                command,
                shell=True,
                input=json.dumps(event),
                text=True,
                capture_output=True,
                cwd=root,
                env=command_env,
                check=False,
                timeout=120,
            )
            assert done.returncode == 0, f"{command!r} on {event} exited {done.returncode}"
            assert done.stdout.strip() in ("", "{}"), f"{command!r} printed {done.stdout!r}"
            assert done.stderr == "", f"{command!r} on {event} failed: {done.stderr}"
            ran += 1

    replay(session, root, send)
    return ran


SNAPSHOT_EVENTS = [
    "session_start",
    "user_prompt_submit",
    "turn_start",
    "pre_tool_use",
    "post_tool_use",
    "turn_end",
    "session_end",
]
CLAUDE_EVENTS = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SessionEnd",
]


def every_hook(config: dict[str, Any]) -> list[dict[str, Any]]:
    return [h for entries in config.values() for e in entries for h in e.get("hooks", [e])]


# The shapes the README promises (used to check the reader; the README is the source).
EXPECTED_YAML = """\
hooks:
  session_start:
    - type: command
      command: snapshotter hook
  pre_tool_use:
    - matcher: "*"
      hooks:
        - type: command
          command: snapshotter hook   # comment
  turn_end:
  - type: command
    command: 'snapshotter hook'
"""


def test_yaml_reader_reads_the_hook_config_shape() -> None:
    assert parse_yaml(EXPECTED_YAML) == {
        "hooks": {
            "session_start": [{"type": "command", "command": "snapshotter hook"}],
            "pre_tool_use": [
                {"matcher": "*", "hooks": [{"type": "command", "command": "snapshotter hook"}]}
            ],
            "turn_end": [{"type": "command", "command": "snapshotter hook"}],
        }
    }, "the tiny YAML reader must read the README's hook config shape"
    for bad in ("a: |\n  text\n", "a: [1, 2]\n", "a: 1\n    b: 2\n", "a: 1\na: 2\n"):
        with pytest.raises(ValueError):
            parse_yaml(bad)


# Fast: the hooks through the resident hook server, as users run them; full: each
# event handled in its own process.
@pytest.mark.parametrize("server", fast_and_full("1", "0"))
def test_readme_docker_agent_yaml_wires_every_snapshot_event(tmp_path: Path, server: str) -> None:
    """README.md's docker-agent ```yaml block, replayed command by command."""
    config = parse_yaml(fenced(README.read_text(), "yaml", "snapshotter hook"))
    hooks = config["hooks"]
    assert sorted(hooks) == sorted(SNAPSHOT_EVENTS), f"README wires every event: {sorted(hooks)}"
    for event in SNAPSHOT_EVENTS:
        tool = event.endswith("tool_use")
        assert commands_for(hooks, event, "any_tool") == ["snapshotter hook"], (
            f"README: {event} runs `snapshotter hook` once"
        )
        if tool:
            assert all(e.get("matcher") == "*" for e in hooks[event]), f"{event} matches all"
    assert all(isinstance(h.get("timeout"), int) for h in every_hook(hooks)), (
        "README: every docker-agent hook sets an explicit timeout"
    )
    from snapshotter.hooks.registry import HooksConfig

    parsed = HooksConfig.parse(hooks)  # the README config is valid for our own executor
    assert [h.command for h in parsed.hooks_for("pre_tool_use", "shell")] == ["snapshotter hook"]

    session = load_session("docker_agent_two_turns")
    root = build_repo(tmp_path / "agent-repo", load_recipe(session["repo"]))
    ran = replay_through(hooks, session, root, server)
    configured = sum(
        1
        for s in session["steps"]
        if "event" in s and s["event"]["hook_event_name"] in SNAPSHOT_EVENTS
    )
    assert ran == configured, f"every snapshot event ran `snapshotter hook` ({ran}/{configured})"
    recorded = shape(listed(root))
    assert recorded == session["expect"], "checkpoints as the recording expects"


# Fast: cd_interrupt, which sends every event the README wires, through the hook
# server as users run it; full: both recordings, each event in its own process.
@pytest.mark.parametrize(
    "case",
    fast_and_full(
        (("claude_code_cd_interrupt",), "1"),
        (("claude_code_session", "claude_code_cd_interrupt"), "0"),
    ),
)
def test_readme_claude_code_settings_wire_every_snapshot_event(
    tmp_path: Path, case: tuple[tuple[str, ...], str]
) -> None:
    """README.md's Claude Code ```json settings, replayed command by command."""
    sessions, server = case
    readme = README.read_text()
    claude_code = readme[readme.index("### Claude Code") : readme.index("### Codex, Gemini CLI")]
    settings = json.loads(fenced(claude_code, "json", "snapshotter hook"))
    hooks = settings["hooks"]
    assert sorted(hooks) == sorted(CLAUDE_EVENTS), f"README wires every event: {sorted(hooks)}"
    for event in CLAUDE_EVENTS:
        assert commands_for(hooks, event, "Edit") == ["snapshotter hook"], (
            f"README: {event} runs `snapshotter hook` once"
        )
    for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        assert all(e.get("matcher") == "*" for e in hooks[event]), f"{event} matches all tools"
    assert all(isinstance(h.get("timeout"), int) for h in every_hook(hooks)), (
        "README: every Claude Code hook sets an explicit timeout"
    )

    sent: set[str] = set()
    for name in sessions:
        session = load_session(name)
        root = build_repo(tmp_path / name, load_recipe(session["repo"]))
        ran = replay_through(hooks, session, root, server)
        wired = [s["event"]["hook_event_name"] for s in session["steps"] if "event" in s]
        sent.update(wired)
        assert ran == sum(e in CLAUDE_EVENTS for e in wired), (
            f"{name}: every recorded snapshot event runs `snapshotter hook`: ran {ran}"
        )
        assert "PostToolUseFailure" in wired or name == "claude_code_session"
        recorded = shape(listed(root))
        assert recorded == session["expect"], f"{name}: checkpoints as recorded"
    assert set(CLAUDE_EVENTS) <= sent, f"replayed every wired event: {set(CLAUDE_EVENTS) - sent}"
