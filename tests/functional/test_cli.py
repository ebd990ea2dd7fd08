"""The ``snapshotter`` command in-process (SPEC §7): every command, option and exit code.

Commands run through ``cli.main`` — the console script's entry point — so exit
codes and stderr are exactly what a user sees. Checkpoints are recorded the way
an agent records them: ``snapshotter hook`` with one JSON event on stdin.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
from builders import Run, edit_files, make_repo, run_cli_in_process, write

from snapshotter.cli.main import load_all

TREE_ID = re.compile(r"^[0-9a-f]{40}$")
SESSION = "sess-1"


Sn = Callable[..., Run]


@pytest.fixture
def sn() -> Sn:
    """``sn("undo", "-C", repo)`` runs ``snapshotter undo -C repo`` through ``main``."""
    return run_cli_in_process


class Agent:
    """Drives ``snapshotter hook`` like an agent runtime would, in-process."""

    def __init__(
        self, sn: Sn, root: Path, session: str = SESSION, hook_args: tuple[str, ...] = ()
    ) -> None:
        self.sn, self.root, self.session, self.hook_args = sn, root, session, hook_args
        self.calls = 0

    def event(self, name: str, cwd: Path | None = None, **fields: Any) -> None:
        payload = {
            "hook_event_name": name,
            "session_id": self.session,
            "cwd": str(cwd or self.root),
            **fields,
        }
        args = [a for arg in self.hook_args for a in ("--arg", arg)]
        r = self.sn("hook", *args, stdin=json.dumps(payload).encode())
        assert r.code == 0, f"hook {name} must exit 0, got {r.code}: {r.err}"
        assert r.out.strip() in ("", "{}"), f"hook prints nothing or {{}}, got {r.out!r}"
        assert r.err == "", f"hook {name} reported a failure: {r.err}"

    def turn(
        self,
        edits: dict[str, str | bytes | None],
        tool: str | None = "write_file",
        reason: str = "normal",
    ) -> None:
        """One turn; with ``tool``, the edits happen inside one tool call of that turn."""
        self.event("turn_start")
        if tool:
            self.calls += 1
            self.event("pre_tool_use", tool_name=tool, tool_use_id=f"call-{self.calls}")
        edit_files(self.root, edits)
        if tool:
            self.event("post_tool_use", tool_name=tool, tool_use_id=f"call-{self.calls}")
        self.event("turn_end", reason=reason)


def listed(sn: Sn, root: Path, *extra: str) -> list[dict[str, Any]]:
    r = sn("list", "-C", root, "--json", *extra)
    assert r.code == 0, f"list --json failed: {r.err}"
    data = json.loads(r.out)
    assert isinstance(data, list), f"list --json must print one JSON list, got {r.out!r}"
    return data


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text()


ORIGINAL = {"README.md": "# demo\n", "src/app.py": "print('hi')\n", "src/util.py": "X = 1\n"}


def worktree_files(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


# -- help -----------------------------------------------------------------------

COMMANDS = ["hook", "capture", "list", "show", "diff", "undo", "redo", "reset", "gc", "demo"]


def test_top_level_help_describes_the_tool_and_every_command(sn: Sn) -> None:
    r = sn("--help")
    assert r.code == 0, f"--help must exit 0, got {r.code}: {r.err}"
    assert "Usage: snapshotter" in r.out, f"usage line missing: {r.out}"
    assert "undo" in r.out.lower() and "worktree" in r.out, f"no self-description: {r.out}"
    for name in COMMANDS:
        assert re.search(rf"^\s+{name}\s", r.out, re.M), f"command {name} not listed: {r.out}"
    assert "--data-dir" in r.out, f"--data-dir not documented: {r.out}"


@pytest.mark.parametrize("name", COMMANDS)
def test_every_subcommand_help_describes_itself_and_its_options(sn: Sn, name: str) -> None:
    r = sn(name, "--help")
    assert r.code == 0, f"{name} --help must exit 0, got {r.code}: {r.err}"
    assert r.out.startswith(f"Usage: snapshotter {name}"), f"bad usage line: {r.out}"
    command = load_all()[name]
    summary = (command.help or "").split("\n")[0].strip()
    assert summary, f"{name} has no help text"
    flat = " ".join(r.out.split())
    assert " ".join(summary.split()) in flat, f"{name} help lacks {summary!r}: {r.out}"
    for param in command.params:
        if isinstance(param, click.Option):
            for opt in param.opts:
                assert opt in r.out, f"{name} --help does not document {opt}: {r.out}"


def test_every_spec_command_exists() -> None:
    missing = set(COMMANDS) - set(load_all())
    assert not missing, f"commands named by SPEC §7 are missing: {missing}"


# -- capture --------------------------------------------------------------------


def test_capture_prints_a_tree_id_that_follows_the_content(
    sn: Sn, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # -C, not the cwd, picks the worktree
    first = sn("capture", "-C", repo)
    assert first.code == 0, f"capture failed: {first.err}"
    assert TREE_ID.match(first.out.strip()), f"capture must print a tree id: {first.out!r}"
    assert first.out.count("\n") == 1, f"capture prints only the tree id: {first.out!r}"
    again = sn("capture", "-C", repo)
    assert again.out == first.out, "an unchanged worktree must give the same tree id"
    write(repo, "src/app.py", "print('changed')\n")
    changed = sn("capture", "-C", repo)
    assert TREE_ID.match(changed.out.strip()) and changed.out != first.out, (
        "a changed file must give a new tree id"
    )


def test_capture_defaults_to_the_current_directory(
    sn: Sn, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    r = sn("capture")
    assert r.code == 0 and TREE_ID.match(r.out.strip()), f"capture in cwd failed: {r}"


def test_capture_max_new_file_size_skips_and_names_large_new_files(sn: Sn, repo: Path) -> None:
    before = sn("capture", "-C", repo).out
    write(repo, "big.bin", b"x" * 4096)
    limited = sn("capture", "-C", repo, "--max-new-file-size", "1KiB")
    assert limited.code == 0, f"capture with a limit failed: {limited.err}"
    assert limited.out == before, "a new file over the limit must not be in the tree"
    assert "big.bin" in limited.err, f"the skip must be named on stderr: {limited.err!r}"
    default = sn("capture", "-C", repo)
    assert default.out != before, "under the default 2 MiB limit a 4 KiB file is captured"
    assert "big.bin" not in default.err, f"nothing skipped by default: {default.err!r}"


def test_capture_bad_size_is_a_usage_error(sn: Sn, repo: Path) -> None:
    r = sn("capture", "-C", repo, "--max-new-file-size", "lots")
    assert r.code == 2, f"an unparsable size is bad usage (2), got {r.code}"
    r.one_line_error("lots")


# -- list -----------------------------------------------------------------------


def test_list_with_no_store_says_so_and_json_is_an_empty_list(
    sn: Sn, repo: Path, data_dir: Path
) -> None:
    r = sn("list", "-C", repo)
    assert r.code == 0, f"list with nothing recorded is not an error: {r.err}"
    assert "no checkpoints" in r.out, f"expected 'no checkpoints': {r.out!r}"
    j = sn("list", "-C", repo, "--json")
    assert j.code == 0 and json.loads(j.out) == [], f"--json must print []: {j.out!r}"
    assert not (data_dir / "snapshot").exists() or not any((data_dir / "snapshot").iterdir()), (
        "list must not create a store"
    )


def test_list_json_is_one_flat_list_with_tools_under_turns(sn: Sn, repo: Path) -> None:
    agent = Agent(sn, repo)
    agent.event("session_start")
    agent.turn({"src/new.py": "NEW = 1\n", "README.md": "# changed\n"})
    r = sn("list", "-C", repo, "--json")
    data = json.loads(r.out)  # raises if anything but one JSON document is on stdout
    assert r.err == "", f"list --json writes nothing to stderr: {r.err!r}"
    nesting = [(c["id"], c["kind"], c["parent"]) for c in data]
    assert nesting == [(1, "tool", 2), (2, "turn", None)], f"expected tool 1 in turn 2: {data}"
    turn = data[1]
    assert turn["session_id"] == SESSION and turn["label"] == "normal", f"bad turn: {turn}"
    assert {f["path"]: f["status"] for f in turn["files"]} == {
        "README.md": "modified",
        "src/new.py": "added",
    }, f"bad files: {turn['files']}"
    for key in (
        "id",
        "session_id",
        "kind",
        "label",
        "created_at",
        "before",
        "after",
        "files",
        "skipped",
        "undone",
        "parent",
    ):
        assert key in turn, f"SPEC §4 field {key} missing from list --json: {turn}"
    assert TREE_ID.match(turn["before"]) and TREE_ID.match(turn["after"]), f"trees: {turn}"


def test_list_human_output_nests_tools_with_their_turn_ids_in_order(sn: Sn, repo: Path) -> None:
    agent = Agent(sn, repo)
    agent.turn({"src/new.py": "NEW = 1\n"}, tool="write_file")
    r = sn("list", "-C", repo)
    assert r.code == 0, f"list failed: {r.err}"
    lines = r.out.splitlines()
    turn_at = next(i for i, line in enumerate(lines) if re.match(r"\s*2\s", line))
    tool_line = lines[turn_at - 1]
    assert re.match(r"\s*1\s", tool_line) and "├" in tool_line and "write_file" in tool_line, (
        f"tool checkpoint 1 must be printed marked right above turn 2 (ids in order): {r.out}"
    )
    assert "+1 ~0 -0" in lines[turn_at], f"turn line shows change counts: {r.out}"


def test_list_defaults_to_the_newest_session_and_filters_by_session_or_all(
    sn: Sn, repo: Path
) -> None:
    Agent(sn, repo, "alpha").turn({"a.txt": "a\n"}, tool=None)
    Agent(sn, repo, "beta").turn({"b.txt": "b\n"}, tool=None)
    assert [c["session_id"] for c in listed(sn, repo)] == ["beta"], (
        "the default session is the one with the newest checkpoint"
    )
    assert [c["session_id"] for c in listed(sn, repo, "--session", "alpha")] == ["alpha"], (
        "--session picks another session"
    )
    assert [c["session_id"] for c in listed(sn, repo, "--all")] == ["alpha", "beta"], (
        "--all lists every session, ordered by id"
    )
    human = sn("list", "-C", repo, "--all")
    assert "session alpha" in human.out and "session beta" in human.out, (
        f"--all groups by session: {human.out}"
    )
    unknown = sn("list", "-C", repo, "--session", "alphx")
    assert unknown.code == 1, f"an unknown session is an error (#26.2): {unknown.out}"
    unknown.one_line_error("no session alphx", "did you mean alpha?")
    assert listed(sn, repo, "--session", "al") == listed(sn, repo, "--session", "alpha"), (
        "a unique prefix selects the session, as git takes object ids"
    )


def test_list_session_and_all_together_is_a_usage_error(sn: Sn, repo: Path) -> None:
    Agent(sn, repo).turn({"a.txt": "a\n"}, tool=None)
    r = sn("list", "-C", repo, "--session", SESSION, "--all")
    assert r.code == 2, f"--session and --all exclude each other (2), got {r.code}: {r.out}"
    assert "Traceback" not in r.err, r.err


def test_list_marks_undone_checkpoints(sn: Sn, repo: Path) -> None:
    Agent(sn, repo).turn({"src/app.py": "print('agent')\n"})
    assert sn("undo", "-C", repo).code == 0, "undo failed"
    data = listed(sn, repo)
    assert all(c["undone"] for c in data), f"turn and its tool must be undone: {data}"
    human = sn("list", "-C", repo).out
    assert human.count("(undone)") == 2, f"both lines carry the undone mark: {human}"


def test_list_and_show_warn_about_skipped_files(sn: Sn, repo: Path) -> None:
    agent = Agent(sn, repo, hook_args=("max_new_file_size=1KiB",))
    agent.turn({"big.bin": "x" * 4096, "src/app.py": "print('agent')\n"}, tool=None)
    data = listed(sn, repo)
    assert len(data) == 1, f"one turn checkpoint expected: {data}"
    assert [s["path"] for s in data[0]["skipped"]] == ["big.bin"], f"skip not recorded: {data}"
    human = sn("list", "-C", repo).out
    assert "1 skipped" in human, f"the checkpoint line flags the skip: {human}"
    assert "undo cannot restore" in human, f"list warns what a skip means: {human}"
    shown = sn("show", data[0]["id"], "-C", repo).out
    assert re.search(r"big\.bin.*skipped", shown), f"show names the skipped file: {shown}"


# -- show and diff ---------------------------------------------------------------


def test_show_prints_files_with_status_and_json(sn: Sn, repo: Path) -> None:
    Agent(sn, repo).turn(
        {"src/new.py": "N = 1\n", "src/app.py": "print('x')\n", "src/util.py": None}
    )
    r = sn("show", "2", "-C", repo)
    assert r.code == 0, f"show failed: {r.err}"
    for expected in ("+ src/new.py", "~ src/app.py", "- src/util.py", SESSION):
        assert expected in r.out, f"show must list {expected!r}: {r.out}"
    j = sn("show", "2", "-C", repo, "--json")
    data = json.loads(j.out)
    assert isinstance(data, dict) and data["id"] == 2 and data["kind"] == "turn", f"{data}"
    assert {f["path"]: f["status"] for f in data["files"]} == {
        "src/new.py": "added",
        "src/app.py": "modified",
        "src/util.py": "deleted",
    }, data
    tool = json.loads(sn("show", "1", "-C", repo, "--json").out)
    assert tool["parent"] == 2, f"show of a tool names its turn: {tool}"


def test_show_unknown_id_is_an_error(sn: Sn, repo: Path) -> None:
    Agent(sn, repo).turn({"a.txt": "a\n"}, tool=None)
    r = sn("show", "99", "-C", repo)
    assert r.code == 1, f"an unknown checkpoint id exits 1, got {r.code}"
    r.one_line_error("99")


def test_show_unknown_id_before_any_store_is_an_error(sn: Sn, repo: Path) -> None:
    r = sn("show", "1", "-C", repo)
    assert r.code == 1, f"an unknown checkpoint id exits 1 even with no store, got {r.code}"
    r.one_line_error("1")


def test_diff_defaults_to_the_newest_checkpoint_and_takes_an_id(sn: Sn, repo: Path) -> None:
    agent = Agent(sn, repo)
    agent.turn({"src/app.py": "print('one')\n"}, tool=None)
    agent.turn({"src/util.py": "X = 2\n"}, tool=None)
    newest = sn("diff", "-C", repo)
    assert newest.code == 0, f"diff failed: {newest.err}"
    assert "-X = 1" in newest.out and "+X = 2" in newest.out, f"unified diff: {newest.out}"
    assert "src/app.py" not in newest.out, f"only the newest checkpoint: {newest.out}"
    first = sn("diff", "1", "-C", repo)
    assert "-print('hi')" in first.out and "+print('one')" in first.out, first.out
    assert "--- a/src/app.py" in first.out and "+++ b/src/app.py" in first.out, first.out


def test_diff_stat_summarises(sn: Sn, repo: Path) -> None:
    Agent(sn, repo).turn({"src/app.py": "print('one')\n", "new.txt": "n\n"}, tool=None)
    r = sn("diff", "--stat", "-C", repo)
    assert r.code == 0, f"diff --stat failed: {r.err}"
    assert re.search(r"src/app\.py\s*\|", r.out) and re.search(r"new\.txt\s*\|", r.out), r.out
    assert "2 files changed" in r.out, f"a summary line: {r.out}"
    assert "@@" not in r.out, f"--stat prints no hunks: {r.out}"


def test_diff_errors(sn: Sn, repo: Path) -> None:
    none_yet = sn("diff", "-C", repo)
    assert none_yet.code == 3, f"diff with nothing recorded is nothing to do (3): {none_yet}"
    none_yet.one_line_error()
    Agent(sn, repo).turn({"a.txt": "a\n"}, tool=None)
    unknown = sn("diff", "42", "-C", repo)
    assert unknown.code == 1, f"diff of an unknown id exits 1, got {unknown.code}"
    unknown.one_line_error("42")


# -- undo / redo -----------------------------------------------------------------


def test_undo_reverts_the_newest_turn_and_redo_puts_it_back(sn: Sn, repo: Path) -> None:
    agent = Agent(sn, repo)
    agent.turn({"src/app.py": "print('one')\n"})
    agent.turn({"src/new.py": "NEW\n", "src/util.py": None})
    after_two = worktree_files(repo)
    undo = sn("undo", "-C", repo)
    assert undo.code == 0, f"undo failed: {undo.err}"
    assert "undid checkpoint 4" in undo.out and "redo" in undo.out, f"undo report: {undo.out}"
    assert not (repo / "src/new.py").exists(), "an added file is removed by undo"
    assert read(repo, "src/util.py") == "X = 1\n", "a deleted file comes back"
    assert read(repo, "src/app.py") == "print('one')\n", "the older turn is untouched"
    redo = sn("redo", "-C", repo)
    assert redo.code == 0 and "redid checkpoint 4" in redo.out, f"redo: {redo.out}{redo.err}"
    assert worktree_files(repo) == after_two, "redo restores the state before the undo"
    assert not any(c["undone"] for c in listed(sn, repo)), "redo clears the undone marks"


def test_undo_and_redo_json(sn: Sn, repo: Path) -> None:
    Agent(sn, repo).turn({"src/new.py": "NEW\n", "src/app.py": "print('x')\n"})
    undo = sn("undo", "-C", repo, "--json")
    assert undo.code == 0, undo.err
    doc = json.loads(undo.out)
    assert doc["checkpoint"] == [2], f"undo names the turn it reverted: {doc}"
    assert doc["restored"] == ["src/app.py"] and doc["removed"] == ["src/new.py"], doc
    redo = json.loads(sn("redo", "-C", repo, "--json").out)
    assert redo["checkpoint"] == [2], f"redo names the turn it re-applied: {redo}"
    assert redo["restored"] == ["src/app.py", "src/new.py"] and redo["removed"] == [], redo


def test_undo_and_redo_dry_run_change_nothing(sn: Sn, repo: Path, data_dir: Path) -> None:
    Agent(sn, repo).turn({"src/new.py": "NEW\n", "src/app.py": "print('x')\n"})
    files, cps = worktree_files(repo), listed(sn, repo)
    dry = sn("undo", "-C", repo, "--dry-run")
    assert dry.code == 0, f"undo --dry-run failed: {dry.err}"
    assert "would" in dry.out and "src/new.py" in dry.out, f"dry run says what: {dry.out}"
    dry_json = json.loads(sn("undo", "-C", repo, "--dry-run", "--json").out)
    assert dry_json["removed"] == ["src/new.py"] and dry_json["dry_run"] is True, dry_json
    assert worktree_files(repo) == files, "undo --dry-run must not touch the worktree"
    assert listed(sn, repo) == cps, "undo --dry-run must not mark anything undone"
    redo_nothing = sn("redo", "-C", repo, "--dry-run")
    assert redo_nothing.code == 3, f"nothing undone yet, redo --dry-run exits 3: {redo_nothing}"
    assert sn("undo", "-C", repo).code == 0
    undone = worktree_files(repo)
    dry_redo = sn("redo", "-C", repo, "--dry-run", "--json")
    assert json.loads(dry_redo.out)["restored"] == ["src/app.py", "src/new.py"], dry_redo.out
    assert worktree_files(repo) == undone, "redo --dry-run must not touch the worktree"
    assert sn("redo", "-C", repo).code == 0, "the real redo is still available"
    assert worktree_files(repo) == files, "redo after a dry run restores everything"


def test_nothing_to_undo_or_redo_exits_3(sn: Sn, repo: Path, data_dir: Path) -> None:
    for args in (["undo"], ["redo"], ["reset", "--original"], ["undo", "--json"]):
        r = sn(*args, "-C", repo)
        assert r.code == 3, f"{args} with no store must exit 3, got {r.code}: {r.err}"
        r.one_line_error()
        assert_error_stdout(r, args)
    Agent(sn, repo).turn({"a.txt": "a\n"})
    assert sn("redo", "-C", repo).code == 3, "nothing undone: redo exits 3"
    assert sn("undo", "-C", repo).code == 0, "one turn to undo"
    again = sn("undo", "-C", repo)
    assert again.code == 3, f"everything undone: undo exits 3, got {again.code}"
    again.one_line_error()
    assert sn("undo", "-C", repo, "--session", "other").code == 1, "no such session: an error"


def test_undo_refuses_files_changed_since_the_checkpoint_and_force_overrides(
    sn: Sn, repo: Path
) -> None:
    Agent(sn, repo).turn({"src/app.py": "print('agent')\n", "src/new.py": "N\n"})
    write(repo, "src/app.py", "print('user edit')\n")
    refused = sn("undo", "-C", repo)
    assert refused.code == 4, f"a file changed since the checkpoint: exit 4, got {refused.code}"
    refused.one_line_error("src/app.py", "--force")
    assert "src/new.py" not in refused.err, f"only changed files are named: {refused.err}"
    assert read(repo, "src/app.py") == "print('user edit')\n", "refusal changes nothing"
    assert (repo / "src/new.py").exists(), "refusal changes nothing"
    assert not any(c["undone"] for c in listed(sn, repo)), "refusal marks nothing undone"
    dry = sn("undo", "-C", repo, "--dry-run")
    assert dry.code == 4, f"a dry run reports the same refusal, got {dry.code}"
    forced = sn("undo", "-C", repo, "--force", "--json")
    assert forced.code == 0, f"--force goes ahead: {forced.err}"
    assert read(repo, "src/app.py") == "print('hi')\n", "--force restores the checkpoint's before"
    assert not (repo / "src/new.py").exists(), "--force removes what the turn added"
    assert sn("redo", "-C", repo).code == 0, "redo after a forced undo"
    assert read(repo, "src/app.py") == "print('user edit')\n", "redo brings the user's edit back"


def test_redo_refuses_when_the_undone_state_was_edited(sn: Sn, repo: Path) -> None:
    Agent(sn, repo).turn({"src/app.py": "print('agent')\n"})
    assert sn("undo", "-C", repo).code == 0
    write(repo, "src/app.py", "print('after undo')\n")
    refused = sn("redo", "-C", repo)
    assert refused.code == 4, f"redo over a later edit is refused (4), got {refused.code}"
    refused.one_line_error("src/app.py")
    assert read(repo, "src/app.py") == "print('after undo')\n", "refusal changes nothing"
    assert sn("redo", "-C", repo, "--force").code == 0, "redo --force goes ahead"
    assert read(repo, "src/app.py") == "print('agent')\n", "redo --force re-applies"


def test_undo_targets_the_named_session(sn: Sn, repo: Path) -> None:
    Agent(sn, repo, "alpha").turn({"a.txt": "a\n"}, tool=None)
    Agent(sn, repo, "beta").turn({"b.txt": "b\n"}, tool=None)
    r = sn("undo", "-C", repo, "--session", "alpha")
    assert r.code == 0, r.err
    assert not (repo / "a.txt").exists(), "alpha's file is undone"
    assert (repo / "b.txt").exists(), "beta's file is untouched"
    default = sn("undo", "-C", repo)
    assert default.code == 0 and not (repo / "b.txt").exists(), "default is the newest session"


# -- reset -----------------------------------------------------------------------


def three_turns(sn: Sn, repo: Path) -> Agent:
    agent = Agent(sn, repo)
    agent.turn({"src/app.py": "print('one')\n"}, tool=None)
    agent.turn({"src/app.py": "print('two')\n", "two.txt": "2\n"}, tool=None)
    agent.turn({"src/util.py": None, "three.txt": "3\n"}, tool=None)
    return agent


def test_reset_id_reverts_everything_after_it(sn: Sn, repo: Path) -> None:
    three_turns(sn, repo)
    after_all = worktree_files(repo)
    r = sn("reset", "1", "-C", repo, "--json")
    assert r.code == 0, f"reset 1 failed: {r.err}"
    doc = json.loads(r.out)
    assert sorted(doc["checkpoint"]) == [2, 3], f"reset 1 reverts checkpoints 2 and 3: {doc}"
    assert worktree_files(repo) == {**ORIGINAL, "src/app.py": "print('one')\n"}, (
        "after reset 1 the worktree is as checkpoint 1 left it"
    )
    assert [c["undone"] for c in listed(sn, repo)] == [False, True, True], "undone marks"
    assert sn("redo", "-C", repo).code == 0, "one redo reverses one whole reset"
    assert worktree_files(repo) == after_all, "redo after reset is exact"


def test_reset_original_goes_back_before_the_first_change(sn: Sn, repo: Path) -> None:
    three_turns(sn, repo)
    files, cps = worktree_files(repo), listed(sn, repo)
    dry = sn("reset", "--original", "-C", repo, "--dry-run")
    assert dry.code == 0 and "would" in dry.out, f"dry run: {dry.out}{dry.err}"
    assert worktree_files(repo) == files, "reset --dry-run must not touch the worktree"
    assert listed(sn, repo) == cps, "reset --dry-run must not mark anything undone"
    r = sn("reset", "--original", "-C", repo)
    assert r.code == 0, f"reset --original failed: {r.err}"
    assert "redo" in r.out, f"human report mentions redo: {r.out}"
    assert worktree_files(repo) == ORIGINAL, "reset --original restores the original files"
    assert all(c["undone"] for c in listed(sn, repo)), "every checkpoint is undone"
    assert sn("reset", "--original", "-C", repo).code == 3, "nothing left to reset: 3"


def test_reset_refuses_changed_files_unless_forced(sn: Sn, repo: Path) -> None:
    three_turns(sn, repo)
    write(repo, "three.txt", "user\n")
    refused = sn("reset", "--original", "-C", repo)
    assert refused.code == 4, f"reset over a user edit is refused (4), got {refused.code}"
    refused.one_line_error("three.txt")
    assert read(repo, "three.txt") == "user\n", "refusal changes nothing"
    assert sn("reset", "--original", "-C", repo, "--force").code == 0, "--force goes ahead"
    assert worktree_files(repo) == ORIGINAL, "forced reset restores the original"


@pytest.mark.parametrize("args", [["reset"], ["reset", "1", "--original"]], ids=["neither", "both"])
def test_reset_needs_exactly_one_of_id_or_original(sn: Sn, repo: Path, args: list[str]) -> None:
    three_turns(sn, repo)
    files = worktree_files(repo)
    r = sn(*args, "-C", repo)
    assert r.code == 2, f"{args} is a usage error (2), got {r.code}"
    assert "--original" in r.err and "Traceback" not in r.err, f"says what to give: {r.err}"
    assert worktree_files(repo) == files, "a usage error changes nothing"


def test_reset_unknown_id_is_an_error(sn: Sn, repo: Path) -> None:
    three_turns(sn, repo)
    r = sn("reset", "77", "-C", repo)
    assert r.code == 1, f"an unknown checkpoint id exits 1, got {r.code}"
    r.one_line_error("77")


# -- gc --------------------------------------------------------------------------


def test_gc_keeps_live_checkpoints_undoable(sn: Sn, repo: Path) -> None:
    Agent(sn, repo).turn({"src/app.py": "print('agent')\n"})
    r = sn("gc", "-C", repo)
    assert r.code == 0, f"gc failed: {r.err}"
    assert str(repo.resolve()) in r.out and "kept" in r.out, f"gc reports per store: {r.out}"
    dry = sn("gc", "-C", repo, "--dry-run")
    assert dry.code == 0, f"gc --dry-run failed: {dry.err}"
    assert sn("undo", "-C", repo).code == 0, "undo after gc"
    assert read(repo, "src/app.py") == "print('hi')\n", "gc kept what undo needs"


def test_gc_all_covers_every_store(sn: Sn, repo: Path, tmp_path: Path) -> None:
    other = make_repo(tmp_path / "other", {"o.txt": "o\n"})
    Agent(sn, repo).turn({"a.txt": "a\n"}, tool=None)
    Agent(sn, other, session="sess-other").turn({"b.txt": "b\n"}, tool=None)
    r = sn("gc", "--all")
    assert r.code == 0, f"gc --all failed: {r.err}"
    for root in (repo, other):
        assert str(root.resolve()) in r.out, f"gc --all must process {root}: {r.out}"


def test_gc_with_no_store_is_nothing_to_do(sn: Sn, repo: Path) -> None:
    r = sn("gc", "-C", repo)
    assert r.code == 3, f"gc before any snapshot has nothing to do (3), got {r.code}"
    r.one_line_error()


# -- --data-dir and -C -----------------------------------------------------------


def test_data_dir_option_overrides_the_environment(
    sn: Sn, repo: Path, tmp_path: Path, data_dir: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    r = sn("--data-dir", elsewhere, "capture", "-C", repo)
    assert r.code == 0, f"capture with --data-dir failed: {r.err}"
    assert (elsewhere / "snapshot").is_dir(), "the store lives under --data-dir/snapshot"
    assert not (data_dir / "snapshot").exists(), "$SNAPSHOTTER_DATA_DIR is not used"
    payload = {"hook_event_name": "turn_start", "session_id": "d", "cwd": str(repo)}
    assert sn("--data-dir", elsewhere, "hook", stdin=json.dumps(payload).encode()).code == 0
    write(repo, "d.txt", "d\n")
    payload["hook_event_name"] = "turn_end"
    assert sn("--data-dir", elsewhere, "hook", stdin=json.dumps(payload).encode()).code == 0
    assert listed(sn, repo) == [], "the environment's data dir has no checkpoints"
    r = sn("--data-dir", elsewhere, "list", "-C", repo, "--json")
    assert [c["files"] for c in json.loads(r.out)] == [[{"path": "d.txt", "status": "added"}]], (
        f"--data-dir list sees the hook's checkpoint: {r.out}"
    )


def test_subdirectory_sees_the_worktrees_checkpoints_and_undoes_all_their_files(
    sn: Sn, repo: Path
) -> None:
    Agent(sn, repo).turn({"README.md": "# agent\n", "src/app.py": "print('agent')\n"})
    sub = repo / "src"
    from_sub = listed(sn, sub)
    assert [c["id"] for c in from_sub] == [1, 2], f"-C src lists the worktree's: {from_sub}"
    r = sn("undo", "-C", sub, "--json")
    assert r.code == 0, f"undo -C src failed: {r.err}"
    assert json.loads(r.out)["restored"] == ["README.md", "src/app.py"], r.out
    assert read(repo, "README.md") == "# demo\n", "a file outside -C's subdirectory is restored"
    assert read(repo, "src/app.py") == "print('hi')\n", "a file inside it is restored"
    assert sn("redo", "-C", sub).code == 0 and read(repo, "README.md") == "# agent\n", "redo"


# -- errors ----------------------------------------------------------------------

OUTSIDE_COMMANDS = [
    ["capture"],
    ["list"],
    ["list", "--json"],
    ["show", "1"],
    ["diff"],
    ["undo"],
    ["redo"],
    ["reset", "--original"],
    ["gc"],
]


@pytest.mark.parametrize("args", OUTSIDE_COMMANDS, ids=lambda a: " ".join(a))
def test_outside_a_worktree_is_one_line_error_1(sn: Sn, tmp_path: Path, args: list[str]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    r = sn(*args, "-C", plain)
    assert r.code == 1, f"{args} outside a worktree must exit 1, got {r.code}: {r.out}"
    r.one_line_error("not inside a git worktree")
    assert_error_stdout(r, args)


def assert_error_stdout(r: Run, args: list[str]) -> None:
    """Nothing on stdout for an error, but with --json the error as one JSON object."""
    if "--json" not in args:
        assert r.out == "", f"{args}: nothing on stdout for an error: {r.out!r}"
        return
    data = json.loads(r.out)
    assert data == {"error": r.err.strip().removeprefix("snapshotter: "), "exit_code": r.code}, (
        f"{args}: --json errors are one JSON object naming the error: {r.out!r}"
    )


def test_outside_a_worktree_via_the_current_directory(
    sn: Sn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    r = sn("undo")
    assert r.code == 1, f"undo outside a worktree exits 1, got {r.code}"
    r.one_line_error("not inside a git worktree")


def test_missing_directory_is_one_line_error(sn: Sn, tmp_path: Path) -> None:
    r = sn("list", "-C", tmp_path / "missing")
    assert r.code == 1, f"-C to a missing directory exits 1, got {r.code}"
    r.one_line_error()


def test_verbose_shows_a_traceback(sn: Sn, tmp_path: Path) -> None:
    r = sn("--verbose", "undo", "-C", tmp_path)
    assert r.code == 1, f"--verbose keeps the exit code, got {r.code}"
    assert "Traceback" in r.err and "not inside a git worktree" in r.err, r.err


def test_unexpected_exception_is_one_line_error_1(
    sn: Sn, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import snapshotter.history.undo

    def boom(*_a: Any, **_k: Any) -> None:
        raise RuntimeError("kaboom")

    Agent(sn, repo).turn({"a.txt": "a\n"}, tool=None)
    monkeypatch.setattr(snapshotter.history.undo, "undo_last", boom)
    r = sn("undo", "-C", repo)
    assert r.code == 1, f"an internal error exits 1, got {r.code}"
    r.one_line_error("kaboom", "--verbose")
    verbose = sn("-v", "undo", "-C", repo)
    assert "Traceback" in verbose.err and "kaboom" in verbose.err, verbose.err


@pytest.mark.parametrize(
    "args",
    [
        ["bogus"],
        ["list", "--bogus"],
        ["show"],
        ["undo", "extra"],
        ["diff", "..3"],
        ["capture", "-C"],
    ],
    ids=lambda a: " ".join(a),
)
def test_bad_usage_exits_2(sn: Sn, repo: Path, args: list[str]) -> None:
    r = sn(*args)
    assert r.code == 2, f"{args} is bad usage (2), got {r.code}: {r.err}"
    r.one_line_error("--help")
    assert r.out == "", f"nothing on stdout for bad usage: {r.out!r}"


# -- hook ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stdin",
    [b"not json", b"[1, 2]", b'{"hook_event_name": 5}', b'{"hook_event_name": "turn_start"}', b""],
    ids=["not-json", "not-object", "wrong-type", "no-cwd", "empty"],
)
def test_hook_never_fails_on_bad_input(sn: Sn, stdin: bytes) -> None:
    r = sn("hook", stdin=stdin)
    assert r.code == 0, f"the hook always exits 0, got {r.code}"
    assert r.out.strip() in ("", "{}"), f"the hook prints nothing or {{}}: {r.out!r}"
    assert "Traceback" not in r.err, f"no traceback from the hook: {r.err}"


def test_hook_outside_a_worktree_is_a_silent_no_op(sn: Sn, tmp_path: Path, data_dir: Path) -> None:
    payload = {"hook_event_name": "turn_start", "session_id": "s", "cwd": str(tmp_path)}
    r = sn("hook", stdin=json.dumps(payload).encode())
    assert r.code == 0 and r.out.strip() in ("", "{}") and r.err == "", f"no-op: {r}"
