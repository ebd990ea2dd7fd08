"""restore(): paths put back exactly, nothing else touched, never outside the worktree (SPEC §5)."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from builders import git, make_repo, open_engine, snapshot_dir_bytes, write

from snapshotter.errors import UnsafePath
from snapshotter.store import restore as restore_mod

OLD_NS = 1_500_000_000_000_000_000  # an mtime far in the past, to spot rewrites

# What is on disk at one path: ("dir",), ("link", target) or ("file", git mode, bytes).
Disk = dict[str, tuple[object, ...]]


def disk_state(root: Path) -> Disk:
    """Everything under ``root`` except ``.git``: kinds, git modes, bytes, link targets."""
    found: Disk = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*dirs, *files]:
            if name == ".git":
                continue
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            st = os.lstat(full)
            if os.path.islink(full):
                found[rel] = ("link", os.readlink(full))
            elif full.is_dir():
                found[rel] = ("dir",)
            else:
                mode = 0o100755 if st.st_mode & 0o100 else 0o100644
                found[rel] = ("file", oct(mode), full.read_bytes())
    return found


def mtimes(root: Path) -> dict[str, int]:
    return {
        rel: os.lstat(root / rel).st_mtime_ns
        for rel, kind in disk_state(root).items()
        if kind[0] == "file"
    }


def age_everything(root: Path) -> None:
    for rel, kind in disk_state(root).items():
        if kind[0] == "file":
            os.utime(root / rel, ns=(OLD_NS, OLD_NS))


@pytest.fixture
def rich(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with every kind of entry: text, exec, binary, CRLF, symlinks, unicode.

    Built with git once per session and copied for each test (symlinks as links).
    """
    template = tmp_path_factory.getbasetemp() / f"rich-template-{__name__}"
    if not template.exists():
        make_repo(template, RICH_FILES, commit=False)
        write(template, "run.sh", "#!/bin/sh\necho run\n", mode=0o755)
        os.symlink("src/app.py", template / "link")
        os.symlink("src", template / "alias")
        git(template, "add", "-A")
        git(template, "commit", "-q", "-m", "rich")
    root = tmp_path / "rich"
    shutil.copytree(template, root, symlinks=True)
    return root


RICH_FILES: dict[str, str | bytes] = {
    "README.md": "# demo\n",
    "src/app.py": "print('hi')\n",
    "src/util.py": "X = 1\n",
    "src/pkg/deep.py": "D = 2\n",
    "data.bin": bytes(range(256)) * 4,
    "crlf.txt": b"one\r\ntwo\r\n",
    "ünï cødé.txt": "unicode\n",
}

# A mutation is a list of steps: ("write", rel, data), ("rm", rel), ("rmtree", rel),
# ("link", rel, target) or ("chmod", rel, mode).
Step = tuple[str, str, Any]

MUTATIONS: dict[str, list[Step]] = {
    "modified": [("write", "src/app.py", "print('bye')\n")],
    "binary-modified": [("write", "data.bin", b"\0\xff" * 700)],
    "crlf-modified": [("write", "crlf.txt", b"one\ntwo\n")],
    "added-in-new-dirs": [("write", "new/deep/er/file.txt", "added\n")],
    "added-top": [("write", "top.txt", "added\n")],
    "deleted": [("rm", "src/util.py", None)],
    "deleted-whole-dir": [("rmtree", "src", None)],
    "deleted-unicode": [("rm", "ünï cødé.txt", None)],
    "exec-added": [("chmod", "README.md", 0o755)],
    "exec-removed": [("chmod", "run.sh", 0o644)],
    "symlink-retarget": [("rm", "link", None), ("link", "link", "src/util.py")],
    "file-to-symlink": [("rm", "README.md", None), ("link", "README.md", "run.sh")],
    "symlink-to-file": [("rm", "link", None), ("write", "link", "now a file\n")],
    "dir-to-symlink": [("rmtree", "src", None), ("link", "src", "alias-target")],
    "symlink-to-dir": [("rm", "alias", None), ("write", "alias/inner/x.txt", "dir\n")],
    "file-to-dir": [("rm", "README.md", None), ("write", "README.md/x.md", "d\n")],
    "dir-to-file": [("rmtree", "src", None), ("write", "src", "a file now\n")],
}
MUTATIONS["everything-at-once"] = [
    step
    for name in (
        "modified",
        "added-in-new-dirs",
        "exec-removed",
        "symlink-to-dir",
        "file-to-symlink",
        "deleted-unicode",
    )
    for step in MUTATIONS[name]
]


def apply(root: Path, steps: list[Step]) -> None:
    for op, rel, arg in steps:
        if op == "write":
            write(root, rel, arg)
        elif op == "rm":
            os.unlink(root / rel)
        elif op == "rmtree":
            shutil.rmtree(root / rel)
        elif op == "link":
            os.symlink(arg, root / rel)
        else:
            os.chmod(root / rel, arg)


@pytest.mark.parametrize("kind", list(MUTATIONS))
def test_restore_undoes_and_redoes_each_kind_of_change(
    rich: Path, data_dir: Path, kind: str
) -> None:
    engine = open_engine(rich, data_dir)
    before_disk = disk_state(rich)
    before = engine.capture().tree
    apply(rich, MUTATIONS[kind])
    after_disk = disk_state(rich)
    after = engine.capture().tree
    paths = [c.path for c in engine.changes(before, after)]
    assert paths, f"fixture: the {kind} mutation should change something"

    engine.restore(before, paths)

    assert disk_state(rich) == before_disk, f"undo of {kind!r} should give back the exact files"
    assert engine.capture().tree == before, (
        f"after undo of {kind!r} the capture should equal before"
    )

    engine.restore(after, paths)

    assert disk_state(rich) == after_disk, f"redo of {kind!r} should give back the changed files"
    assert engine.capture().tree == after, f"after redo of {kind!r} the capture should equal after"


def test_restore_reports_restored_and_removed(rich: Path, data_dir: Path) -> None:
    engine = open_engine(rich, data_dir)
    before = engine.capture().tree
    write(rich, "src/app.py", "print('bye')\n")
    write(rich, "extra.txt", "new\n")
    os.unlink(rich / "src/util.py")
    paths = [c.path for c in engine.changes(before)]

    planned = engine.plan_restore(before, paths)
    assert (rich / "extra.txt").exists(), "plan_restore must not change anything"
    result = engine.restore(before, paths)

    assert sorted(result.restored) == ["src/app.py", "src/util.py"], (
        f"the modified and deleted files should be reported restored; got {result.restored}"
    )
    assert result.removed == ["extra.txt"], (
        f"the added file should be reported removed; got {result.removed}"
    )
    assert (planned.restored, planned.removed) == (result.restored, result.removed), (
        "plan_restore should predict exactly what restore does"
    )


def test_directory_emptied_by_removal_is_removed_but_not_others(rich: Path, data_dir: Path) -> None:
    engine = open_engine(rich, data_dir)
    before = engine.capture().tree
    write(rich, "a/b/c/new.txt", "new\n")
    write(rich, ".gitignore", "*.log\n")
    write(rich, "keep/b/new.txt", "new\n")
    write(rich, "keep/b/user.log", "ignored, never captured: must survive\n")
    (rich / "emptydir").mkdir()
    paths = [c.path for c in engine.changes(before)]

    engine.restore(before, paths)

    assert not (rich / "a").exists(), "directories left empty by the undo should be removed"
    assert (rich / "keep/b/user.log").read_text().startswith("ignored"), (
        "an uncaptured file in a directory the undo touched must survive"
    )
    assert not (rich / "keep/b/new.txt").exists(), "the added file beside it should be removed"
    assert (rich / "emptydir").is_dir(), "an empty directory the checkpoint did not touch stays"


def test_matching_files_keep_their_mtimes(rich: Path, data_dir: Path) -> None:
    engine = open_engine(rich, data_dir)
    before = engine.capture().tree
    write(rich, "src/app.py", "print('bye')\n")
    write(rich, "src/util.py", "changed and changed back\n")
    write(rich, "src/util.py", "X = 1\n")
    age_everything(rich)
    stamps = mtimes(rich)
    every_path = list(disk_state(rich))

    result = engine.restore(before, every_path)

    assert result.restored == ["src/app.py"], (
        f"only the file whose content differs should be written; got {result.restored}"
    )
    after = mtimes(rich)
    untouched = {rel: ns for rel, ns in stamps.items() if rel != "src/app.py"}
    moved = sorted(rel for rel, ns in untouched.items() if after[rel] != ns)
    assert moved == [], (
        f"files whose content already matched must keep their mtimes; moved: {moved}"
    )


def test_exec_flip_keeps_content_and_mtime(rich: Path, data_dir: Path) -> None:
    engine = open_engine(rich, data_dir)
    before = engine.capture().tree
    os.chmod(rich / "run.sh", 0o644)
    os.utime(rich / "run.sh", ns=(OLD_NS, OLD_NS))

    engine.restore(before, ["run.sh"])

    st = os.stat(rich / "run.sh")
    assert st.st_mode & 0o111, "the exec bit should be back"
    assert st.st_mtime_ns == OLD_NS, "a mode-only restore should not rewrite the content"


def test_restore_replaces_destination_symlink_without_following(
    rich: Path, data_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    target = write(outside, "target.txt", "outside content\n")
    engine = open_engine(rich, data_dir)
    before = engine.capture().tree
    os.unlink(rich / "README.md")
    os.symlink(target, rich / "README.md")

    engine.restore(before, ["README.md"])

    assert not os.path.islink(rich / "README.md"), "the symlink should be replaced by the file"
    assert (rich / "README.md").read_text() == "# demo\n", "with the file's captured content"
    assert target.read_text() == "outside content\n", "the symlink's target must not be written"


def test_symlinked_parent_is_never_written_through(
    rich: Path, data_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    write(outside, "app.py", "outside app\n")
    write(outside, "evil.txt", "outside file that must survive\n")
    engine = open_engine(rich, data_dir)
    before = engine.capture().tree
    write(rich, "src/app.py", "edited\n")
    shutil.rmtree(rich / "src")
    os.symlink(outside, rich / "src")
    outside_before = snapshot_dir_bytes(outside)

    with contextlib.suppress(UnsafePath):  # refusing is fine; writing through the link is not
        engine.restore(before, ["src/app.py", "src/util.py", "src/evil.txt"])

    assert snapshot_dir_bytes(outside) == outside_before, (
        "nothing outside the worktree may be written or removed through a symlinked directory"
    )
    assert os.path.islink(rich / "src"), "the symlink itself is left as it is"


def test_full_undo_of_directory_replaced_by_outside_symlink(
    rich: Path, data_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    write(outside, "app.py", "outside app\n")
    engine = open_engine(rich, data_dir)
    before_disk = disk_state(rich)
    before = engine.capture().tree
    shutil.rmtree(rich / "src")
    os.symlink(outside, rich / "src")
    paths = [c.path for c in engine.changes(before)]

    engine.restore(before, paths)

    assert snapshot_dir_bytes(outside) == {"app.py": b"outside app\n"}, (
        "undoing the swap must replace the link, never write into its target"
    )
    assert disk_state(rich) == before_disk, "the real directory and its files should be back"


def test_symlinked_parent_inside_worktree_is_not_written_through(
    rich: Path, data_dir: Path
) -> None:
    engine = open_engine(rich, data_dir)
    before = engine.capture().tree
    os.rename(rich / "src", rich / "moved")
    os.symlink("moved", rich / "src")
    write(rich, "moved/app.py", "edited through the move\n")

    engine.plan_restore(before, ["src/app.py"])
    with contextlib.suppress(UnsafePath):
        engine.restore(before, ["src/app.py"])

    assert (rich / "moved/app.py").read_text() == "edited through the move\n", (
        "a restore must not write through a symlinked directory, even one inside the worktree"
    )


@pytest.mark.parametrize(
    "bad",
    [
        "..",
        "../x",
        "a/../../x",
        "a/..",
        "/etc/passwd",
        "",
        "a//b",
        "./a",
        "a/./b",
        ".git/config",
        "sub/.git/HEAD",
        "nul\0byte",
    ],
)
def test_check_path_rejects_escaping_paths(bad: str) -> None:
    with pytest.raises(UnsafePath):
        restore_mod.check_path(bad)


@pytest.mark.parametrize(
    "good", ["a", "a/b.txt", "...", "..a", "a..", "-dash", "sp ace/ü", "back\\slash", "a\\..\\b"]
)
def test_check_path_accepts_plain_paths(good: str) -> None:
    restore_mod.check_path(good)  # must not raise


@pytest.mark.parametrize(
    "name",
    [
        "back\\slash.txt",
        "new\nline.txt",
        "tab\there",
        "-dash",
        " lead",
        "日本語/ファイル.txt",
        "...",
    ],
)
def test_restore_of_unusual_file_names(rich: Path, data_dir: Path, name: str) -> None:
    write(rich, name, "original\n")
    engine = open_engine(rich, data_dir)
    before = engine.capture().tree
    write(rich, name, "edited\n")
    write(rich, "sibling.txt", "added\n")
    paths = [c.path for c in engine.changes(before)]

    engine.restore(before, paths)

    assert (rich / name).read_text() == "original\n", f"{name!r} should be restorable like any file"
    assert not (rich / "sibling.txt").exists(), f"an undo touching {name!r} should still complete"


def test_restore_with_dotdot_writes_nothing(rich: Path, data_dir: Path, tmp_path: Path) -> None:
    engine = open_engine(rich, data_dir)
    before = engine.capture().tree
    write(rich, "src/app.py", "edited\n")
    parent_before = sorted(os.listdir(tmp_path))

    with pytest.raises(UnsafePath):
        engine.restore(before, ["src/app.py", "../escape.txt"])

    assert sorted(os.listdir(tmp_path)) == parent_before, "nothing may appear outside the worktree"
    assert (rich / "src/app.py").read_text() == "edited\n", (
        "a request with one unsafe path is rejected before anything is written"
    )


def test_restore_in_subdirectory_scope(rich: Path, data_dir: Path) -> None:
    engine = open_engine(rich / "src", data_dir)
    before = engine.capture().tree
    write(rich, "src/app.py", "edited\n")
    write(rich, "README.md", "outside the scope\n")
    paths = [c.path for c in engine.changes(before)]

    engine.restore(before, paths)

    assert paths == ["src/app.py"], f"only in-scope paths should be reported; got {paths}"
    assert (rich / "src/app.py").read_text() == "print('hi')\n", "the in-scope file is restored"
    assert (rich / "README.md").read_text() == "outside the scope\n", (
        "the out-of-scope file is left"
    )


def test_scope_directory_deleted_then_restored(rich: Path, data_dir: Path) -> None:
    engine = open_engine(rich / "src", data_dir)
    before_disk = disk_state(rich)
    before = engine.capture().tree
    shutil.rmtree(rich / "src")
    found = {c.path: c.status for c in engine.changes(before)}

    engine.restore(before, list(found))

    assert found == {
        "src/app.py": "deleted",
        "src/util.py": "deleted",
        "src/pkg/deep.py": "deleted",
    }, f"removing the scope directory should delete every file in it; got {found}"
    assert disk_state(rich) == before_disk, (
        "the restore should recreate the scope directory exactly"
    )


def test_restored_files_leave_no_temp_files(rich: Path, data_dir: Path) -> None:
    engine = open_engine(rich, data_dir)
    before = engine.capture().tree
    for rel in ("src/app.py", "README.md", "crlf.txt"):
        write(rich, rel, "x\n")
    paths = [c.path for c in engine.changes(before)]

    engine.restore(before, paths)

    leftovers = [rel for rel in disk_state(rich) if "snapshotter-tmp" in rel]
    assert leftovers == [], f"a finished restore should leave no temp files; found {leftovers}"
