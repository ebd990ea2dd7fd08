"""Issue 26.3: what undo cannot bring back is said, not silent.

An agent that runs ``rm -rf .vscode`` or ``git clean -fdx`` deletes ignored
files that no capture holds. The checkpoint says so ("not held: ignored") in
``show``, ``list --json`` and undo's report; and ``git config
snapshotter.keepIgnored`` (off by default) keeps chosen ignored files in the
store, so undo brings them back. Checkpoints come from hook events, as an
agent records them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from builders import event, hook_ok, run_cli_in_process, wait_for, write

IGNORES = ".env\n.vscode/\nbuild/\n*.log\n"


@pytest.fixture
def project(repo: Path) -> Path:
    """The repo with ignored files an agent may delete: .env, .vscode/, build/, a log."""
    write(repo, ".gitignore", IGNORES)
    write(repo, ".env", "SECRET=1\n")
    write(repo, ".vscode/settings.json", "{}\n")
    write(repo, "build/out.o", "obj\n")
    write(repo, "app.log", "log\n")
    return repo


def hook(root: Path, name: str, **fields: Any) -> None:
    r = run_cli_in_process("hook", stdin=json.dumps(event(name, root, "agent", **fields)).encode())
    assert r.code == 0 and not r.err, f"hook {name}: {r}"


def agent_turn(root: Path, act: Any) -> None:
    hook(root, "turn_start", prompt="clean up")
    act()
    hook(root, "turn_end")


def git_clean(root: Path) -> None:
    """What `git clean -fdx` deletes here: every untracked file, ignored ones too."""
    for rel in (".env", ".vscode", "build", "app.log"):
        path = root / rel
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    (root / "README.md").write_text("edited too\n")


NOT_HELD = [".env", ".vscode/", "app.log", "build/"]


def test_deleted_ignored_files_are_reported_by_show_list_and_undo(project: Path) -> None:
    agent_turn(project, lambda: git_clean(project))
    cp = json.loads(run_cli_in_process("list", "-C", project, "--json").out)[-1]
    said = {s["path"]: s["reason"] for s in cp["skipped"]}
    assert said == dict.fromkeys(NOT_HELD, "not held: ignored"), cp
    shown = run_cli_in_process("show", "-C", project, str(cp["id"])).out
    assert ".vscode/  (deleted; not held: ignored: undo cannot bring it back)" in shown, shown
    listing = run_cli_in_process("list", "-C", project).out
    assert "! 4 ignored deleted, not held" in listing, listing
    undo = run_cli_in_process("undo", "-C", project, "--json")
    assert undo.code == 0, undo
    report = json.loads(undo.out)
    assert report["not_held"] == NOT_HELD and report["restored"] == ["README.md"], report
    assert not (project / ".env").exists(), "never held, so not brought back"
    run_cli_in_process("redo", "-C", project)
    human = run_cli_in_process("undo", "-C", project).out
    assert "! not brought back .env (not held: ignored, never stored)" in human, human


def test_ignored_files_kept_or_only_edited_are_not_reported(project: Path) -> None:
    def edit() -> None:
        write(project, ".env", "SECRET=2\n")
        write(project, "README.md", "x\n")
        write(project, "build/more.o", "more\n")

    agent_turn(project, edit)
    cp = json.loads(run_cli_in_process("list", "-C", project, "--json").out)[-1]
    assert cp["skipped"] == [], f"nothing ignored was deleted: {cp}"


def test_keep_ignored_keeps_chosen_ignored_files_so_undo_restores_them(project: Path) -> None:
    subprocess.run(
        ["git", "config", "snapshotter.keepIgnored", ".env*, .vscode/"], cwd=project, check=True
    )
    hook(project, "session_start")  # the baseline holds the kept files
    agent_turn(project, lambda: git_clean(project))
    report = json.loads(run_cli_in_process("undo", "-C", project, "--json").out)
    assert sorted(report["restored"]) == [".env", ".vscode/settings.json", "README.md"], report
    assert report["not_held"] == ["app.log", "build/"], "the rest is still said"
    assert (project / ".env").read_text() == "SECRET=1\n"
    assert (project / ".vscode/settings.json").read_text() == "{}\n"


def test_the_hook_server_reports_them_as_a_process_of_its_own_does(
    project: Path, data_dir: Path, server_socket: Path
) -> None:
    """The server's watched walk redoes only the directories that changed: it must
    keep the ignored paths it saw as a whole walk does."""
    hook_ok(event("session_start", project, "agent"), data_dir)
    wait_for(server_socket)
    hook_ok(event("turn_start", project, "agent"), data_dir)
    write(project, "src/new.py", "x\n")
    hook_ok(event("turn_end", project, "agent"), data_dir)
    hook_ok(event("turn_start", project, "agent"), data_dir)
    git_clean(project)
    hook_ok(event("turn_end", project, "agent"), data_dir)
    listed = run_cli_in_process("list", "-C", project, "--json", data_dir=data_dir)
    cps = json.loads(listed.out)
    assert [s["path"] for s in cps[-1]["skipped"]] == NOT_HELD, cps
