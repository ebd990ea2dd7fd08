"""Capture: which files a snapshot holds, and byte-exact what it holds of them (SPEC §3)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest
from builders import blob_at, git, make_repo, open_engine, write

from snapshotter.engine import Engine
from snapshotter.errors import NotAWorktree

MIB = 1024 * 1024
LIMIT = 2 * MIB  # SPEC §3: new files above 2 MiB are skipped by default
MODE_FILE = 0o100644
MODE_EXEC = 0o100755
MODE_LINK = 0o120000


def listing(engine: Engine, tree: str) -> dict[str, int]:
    """Every non-directory path in ``tree`` with its git mode, read straight from the store."""
    found: dict[str, int] = {}

    def walk(obj: pygit2.Tree, prefix: str) -> None:
        for item in obj:
            assert item.name is not None, f"a tree entry without a name under {prefix!r}"
            path = prefix + item.name
            if item.filemode == pygit2.enums.FileMode.TREE:
                sub = engine.store.objects.repo[item.id]
                assert isinstance(sub, pygit2.Tree)
                walk(sub, path + "/")
            else:
                found[path] = int(item.filemode)

    top = engine.store.objects.repo[tree]
    assert isinstance(top, pygit2.Tree)
    walk(top, "")
    return found


def mode_of(engine: Engine, tree: str, rel: str) -> int | None:
    entry = engine.entry(tree, rel)
    return None if entry is None else entry[0]


# -- what is included ------------------------------------------------------


def test_tracked_untracked_ignored_and_negated(repo: Path, data_dir: Path) -> None:
    write(repo, ".gitignore", "*.log\nbuild/\n!keep.log\n")
    write(repo, "new.txt", "untracked\n")
    write(repo, "debug.log", "ignored\n")
    write(repo, "keep.log", "negated, so kept\n")
    write(repo, "build/out.o", "ignored dir\n")
    write(repo, "src/deep/trace.log", "ignored in a subdirectory\n")
    write(repo, "forced.log", "tracked although ignored\n")
    git(repo, "add", "-f", "forced.log")

    paths = set(listing(engine := open_engine(repo, data_dir), engine.capture().tree))

    expected = {
        ".gitignore",
        "README.md",
        "src/app.py",
        "src/util.py",
        "new.txt",
        "keep.log",
        "forced.log",
    }
    assert paths == expected, (
        f"capture should hold tracked, untracked and negated files only; got {sorted(paths)}"
    )


def test_tracked_file_in_ignored_directory_is_captured(repo: Path, data_dir: Path) -> None:
    write(repo, "vendor/lib.py", "tracked\n")
    git(repo, "add", "vendor/lib.py")
    write(repo, ".gitignore", "vendor/\n")
    write(repo, "vendor/untracked.py", "ignored\n")

    engine = open_engine(repo, data_dir)
    paths = listing(engine, engine.capture().tree)

    assert "vendor/lib.py" in paths, "a tracked file under an ignored directory must be captured"
    assert "vendor/untracked.py" not in paths, (
        "an untracked file under an ignored directory must not"
    )


def test_info_exclude_and_global_excludes_apply(repo: Path, data_dir: Path, hermetic: Path) -> None:
    write(repo, ".git/info/exclude", "*.secret\n")
    write(hermetic, ".config/git/ignore", "*.swp\n")
    write(repo, "a.secret", "x")
    write(repo, "b.swp", "x")
    write(repo, "c.txt", "x")

    engine = open_engine(repo, data_dir)
    paths = listing(engine, engine.capture().tree)

    assert "a.secret" not in paths, "$GIT_DIR/info/exclude rules must be honoured"
    assert "b.swp" not in paths, "the global excludes file must be honoured"
    assert "c.txt" in paths, "an unignored untracked file must be captured"


# -- large files -------------------------------------------------------------


def test_large_new_file_is_skipped_with_a_reason(repo: Path, data_dir: Path) -> None:
    write(repo, "big.bin", b"\0" * (LIMIT + 1))
    write(repo, "exact.bin", b"\1" * LIMIT)

    capture = open_engine(repo, data_dir).capture()

    assert "big.bin" in capture.skipped, "a new file over 2 MiB should be reported as skipped"
    assert capture.skipped["big.bin"].reason, "a skipped file should carry a reason"
    engine = open_engine(repo, data_dir)
    assert engine.entry(capture.tree, "big.bin") is None, "a skipped file must not be in the tree"
    assert engine.entry(capture.tree, "exact.bin") is not None, (
        "a file of exactly 2 MiB is not larger than the limit and should be captured"
    )


def test_configured_limit_is_honoured(repo: Path, data_dir: Path) -> None:
    write(repo, "medium.bin", b"m" * 2000)
    write(repo, "small.bin", b"s" * 500)
    write(repo, "big.bin", b"b" * (LIMIT + 10))

    strict = open_engine(repo, data_dir, max_new_file_size=1000).capture()
    assert set(strict.skipped) == {"medium.bin", "big.bin"}, (
        f"with a 1000-byte limit both larger files should be skipped; got {sorted(strict.skipped)}"
    )

    loose = open_engine(repo, data_dir, max_new_file_size=4 * MIB)
    capture = loose.capture()
    assert capture.skipped == {}, (
        f"with a 4 MiB limit nothing should be skipped; got {capture.skipped}"
    )
    assert blob_at(loose, capture.tree, "big.bin") == b"b" * (LIMIT + 10), (
        "a raised limit should capture the 2 MiB+ file byte for byte"
    )


def test_file_captured_small_then_grown_is_still_captured(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir, max_new_file_size=1000)
    write(repo, "grows.txt", "small\n")
    engine.capture()
    write(repo, "grows.txt", b"g" * 5000)

    capture = engine.capture()

    assert "grows.txt" not in capture.skipped, "a file already captured is kept whatever its growth"
    assert blob_at(engine, capture.tree, "grows.txt") == b"g" * 5000, (
        "the grown file's new content should be captured"
    )


def test_tracked_file_over_limit_is_captured(tmp_path: Path, data_dir: Path) -> None:
    root = make_repo(tmp_path / "r", {"huge.dat": b"h" * 5000})
    write(root, "huge.dat", b"H" * 6000)  # modified and bigger still

    engine = open_engine(root, data_dir, max_new_file_size=1000)
    capture = engine.capture()

    assert capture.skipped == {}, f"a tracked file is never skipped for size; got {capture.skipped}"
    assert blob_at(engine, capture.tree, "huge.dat") == b"H" * 6000, (
        "a tracked file over the limit should be captured with its current bytes"
    )


def test_skipped_file_that_shrinks_is_captured(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir, max_new_file_size=1000)
    write(repo, "log.txt", b"x" * 2000)
    assert "log.txt" in engine.capture().skipped, "the 2000-byte new file should be skipped"
    write(repo, "log.txt", b"y" * 10)

    capture = engine.capture()

    assert capture.skipped == {}, "once under the limit the file is no longer skipped"
    assert blob_at(engine, capture.tree, "log.txt") == b"y" * 10, "and its bytes are captured"


# -- file kinds and bytes -------------------------------------------------------


def test_symlinks_are_captured_as_links_never_followed(
    repo: Path, data_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    write(outside, "secret.txt", "do not read me\n")
    os.symlink("README.md", repo / "to-file")
    os.symlink("src", repo / "to-dir")
    os.symlink(str(outside), repo / "to-outside")
    os.symlink("missing/target", repo / "dangling")

    engine = open_engine(repo, data_dir)
    tree = engine.capture().tree
    paths = listing(engine, tree)

    for link, target in [
        ("to-file", b"README.md"),
        ("to-dir", b"src"),
        ("to-outside", os.fsencode(outside)),
        ("dangling", b"missing/target"),
    ]:
        assert paths.get(link) == MODE_LINK, f"{link} should be captured with mode 0o120000"
        assert blob_at(engine, tree, link) == target, f"{link} should store its target {target!r}"
    followed = [p for p in paths if p.startswith(("to-dir/", "to-outside/"))]
    assert followed == [], f"symlinked directories must never be walked; found {followed}"


def test_exec_bit_is_recorded(repo: Path, data_dir: Path) -> None:
    write(repo, "run.sh", "#!/bin/sh\n", mode=0o755)
    write(repo, "plain.sh", "#!/bin/sh\n", mode=0o644)

    engine = open_engine(repo, data_dir)
    tree = engine.capture().tree

    assert mode_of(engine, tree, "run.sh") == MODE_EXEC, "an executable file should be 0o100755"
    assert mode_of(engine, tree, "plain.sh") == MODE_FILE, "a plain file should be 0o100644"


@pytest.mark.parametrize(
    "name",
    [
        "ünïcødé.txt",
        "日本語/ファイル.txt",
        "emoji-🎉.md",
        "with space.txt",
        "dir with space/inner file",
        "tab\there.txt",
        "-dash.txt",
        "--double-dash",
        " leading-space",
        "trailing-space ",
        "quote'\"mix.txt",
        "back\\slash.txt",
        "new\nline.txt",
    ],
)
def test_unusual_file_names_are_captured(repo: Path, data_dir: Path, name: str) -> None:
    write(repo, name, f"content of {name}\n")

    engine = open_engine(repo, data_dir)
    tree = engine.capture().tree

    assert blob_at(engine, tree, name) == f"content of {name}\n".encode(), (
        f"the file named {name!r} should be captured under its exact name"
    )


def test_crlf_is_stored_byte_exact_even_with_autocrlf(
    repo: Path, data_dir: Path, hermetic: Path
) -> None:
    git(repo, "config", "core.autocrlf", "true")
    git(repo, "config", "--global", "core.autocrlf", "true")
    write(repo, ".gitattributes", "* text eol=lf\n*.txt filter=nope\n")
    data = {
        "crlf.txt": b"one\r\ntwo\r\n",
        "mixed.txt": b"a\r\nb\nc\r\rd",
        "lone-cr.md": b"x\ry\r",
    }
    for rel, raw in data.items():
        write(repo, rel, raw)

    engine = open_engine(repo, data_dir)
    tree = engine.capture().tree

    for rel, raw in data.items():
        assert blob_at(engine, tree, rel) == raw, (
            f"{rel} should be stored with no line-ending conversion"
        )


def test_binary_content_is_stored_byte_exact(repo: Path, data_dir: Path) -> None:
    raw = bytes(range(256)) * 64 + b"\0\r\n\xff"
    write(repo, "blob.bin", raw)

    engine = open_engine(repo, data_dir)

    assert blob_at(engine, engine.capture().tree, "blob.bin") == raw, (
        "binary bytes should round-trip"
    )


def test_non_utf8_file_name_is_captured_under_its_exact_bytes(repo: Path, data_dir: Path) -> None:
    # Issue 13 §8: names are bytes end to end, as git's are (this used to be a skip).
    name = os.fsdecode(b"bad\xffname.txt")
    write(repo, name, b"odd\n")

    engine = open_engine(repo, data_dir)
    capture = engine.capture()

    assert capture.skipped == {}, f"nothing is skipped; got {list(capture.skipped)}"
    assert blob_at(engine, capture.tree, name) == b"odd\n", "captured under its exact name"
    assert "README.md" in listing(engine, capture.tree), "the other files are still captured"


def test_special_files_are_not_captured(repo: Path, data_dir: Path) -> None:
    os.mkfifo(repo / "pipe")

    engine = open_engine(repo, data_dir)
    capture = engine.capture()

    assert engine.entry(capture.tree, "pipe") is None, "a FIFO is not a file git would track"
    assert "README.md" in listing(engine, capture.tree), "other files are still captured"


# -- nested repositories and submodules --------------------------------------


def test_nested_repositories_captured_as_files_without_their_git(
    repo: Path, data_dir: Path
) -> None:
    nested = make_repo(repo / "nested", {"lib.py": "L\n", ".gitignore": "*.tmp\n"})
    write(nested, "scratch.tmp", "ignored by the nested repo's own rules\n")
    write(nested, "untracked.py", "U\n")
    fresh = make_repo(repo / "fresh", commit=False)  # `git init` with no commit, no index
    write(fresh, "draft.md", "D\n")
    write(fresh, "sub/more.md", "M\n")

    engine = open_engine(repo, data_dir)
    paths = set(listing(engine, engine.capture().tree))

    for rel in (
        "nested/lib.py",
        "nested/.gitignore",
        "nested/untracked.py",
        "fresh/draft.md",
        "fresh/sub/more.md",
    ):
        assert rel in paths, f"{rel} (inside a nested repository) should be captured as a file"
    assert "nested/scratch.tmp" not in paths, "the nested repository's .gitignore should apply"
    leaked = sorted(p for p in paths if "/.git/" in f"/{p}")
    assert leaked == [], f"no nested .git content may be captured; found {leaked}"


def test_parent_ignore_rules_do_not_reach_into_nested_repo(repo: Path, data_dir: Path) -> None:
    write(repo, ".gitignore", "*.gen\n")
    nested = make_repo(repo / "nested", {"a.txt": "a\n"})
    write(nested, "b.gen", "generated\n")
    write(repo, "top.gen", "generated\n")

    engine = open_engine(repo, data_dir)
    paths = set(listing(engine, engine.capture().tree))

    assert "top.gen" not in paths, "the worktree's own .gitignore applies at the top"
    # git evaluates a nested repository with its own rules only (plus global ones).
    assert "nested/b.gen" in paths, (
        "the parent's .gitignore does not apply inside a nested repository"
    )


def test_submodule_files_captured_without_git(tmp_path: Path, data_dir: Path) -> None:
    lib = make_repo(tmp_path / "lib", {"lib.txt": "library\n", ".gitignore": "*.cache\n"})
    root = make_repo(tmp_path / "main", {"main.txt": "main\n"})
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "libs/sub")
    git(root, "commit", "-q", "-m", "add submodule")
    sub = root / "libs" / "sub"
    assert (sub / ".git").is_file(), "fixture: a submodule's .git is a gitdir file"
    write(sub, "edited.txt", "agent edit\n")
    write(sub, "x.cache", "ignored by the submodule\n")

    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    paths = listing(engine, tree)

    assert paths.get("libs/sub/lib.txt") == MODE_FILE, (
        "submodule files are captured as ordinary files"
    )
    assert "libs/sub/edited.txt" in paths, "untracked files in a submodule are captured"
    assert ".gitmodules" in paths, "the .gitmodules file is an ordinary tracked file"
    assert "libs/sub/x.cache" not in paths, "the submodule's own .gitignore should apply"
    assert "libs/sub/.git" not in paths, "the submodule's .git file must not be captured"
    assert 0o160000 not in paths.values(), "no gitlink entries in a snapshot: files are captured"


def test_linked_worktree_uses_its_own_index_and_common_excludes(
    repo: Path, data_dir: Path, tmp_path: Path
) -> None:
    write(repo, ".git/info/exclude", "*.secret\n")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    write(linked, "x.secret", "excluded via the common dir\n")
    write(linked, "side.txt", "only in the linked worktree\n")
    write(linked, "big.dat", b"b" * 3000)
    git(linked, "add", "big.dat")  # tracked in the linked worktree's own index only

    engine = open_engine(linked, data_dir, max_new_file_size=1000)
    capture = engine.capture()
    paths = set(listing(engine, capture.tree))

    assert engine.root == linked.resolve(), "the engine should pick the linked worktree as root"
    assert {"README.md", "side.txt", "big.dat"} <= paths, (
        f"tracked, untracked and index-tracked large files should be captured; got {sorted(paths)}"
    )
    assert "x.secret" not in paths, "info/exclude of the common git dir should apply"
    assert not (linked / ".git").is_dir(), "the linked worktree's .git file must stay a file"


# -- the store and the scope -----------------------------------------------


def test_data_dir_inside_worktree_is_not_captured(repo: Path) -> None:
    inside = repo / ".snapdata"
    engine = open_engine(repo, inside)
    first = engine.capture()
    write(repo, "later.txt", "x\n")
    engine.capture()
    os.unlink(repo / "later.txt")

    third = engine.capture()

    paths = listing(engine, third.tree)
    leaked = sorted(p for p in paths if p.startswith(".snapdata/"))
    assert leaked == [], f"the store must not snapshot itself; found {leaked[:5]}"
    assert third.tree == first.tree, "with the worktree back as it was, the tree should be the same"


def test_scope_is_limited_to_subdirectory(repo: Path, data_dir: Path) -> None:
    scoped = open_engine(repo / "src", data_dir)
    before = scoped.capture().tree
    write(repo, "README.md", "# changed outside the scope\n")
    write(repo, "outside-new.txt", "new outside\n")
    write(repo, "src/app.py", "print('changed')\n")
    write(repo, "src/new.py", "N = 1\n")

    found = {(c.path, c.status) for c in scoped.changes(before)}

    assert found == {("src/app.py", "modified"), ("src/new.py", "added")}, (
        f"an engine opened on src/ should only report changes inside src/; got {sorted(found)}"
    )


def test_scoped_capture_keeps_the_rest_of_the_last_full_capture(repo: Path, data_dir: Path) -> None:
    full = open_engine(repo, data_dir)
    full.capture()
    scoped = open_engine(repo / "src", data_dir)

    tree = scoped.capture().tree

    assert full.entry(tree, "README.md") is not None, (
        "a scoped capture should not drop files outside its scope from the store's tree"
    )


def test_capture_from_subdirectory_of_ignored_directory(repo: Path, data_dir: Path) -> None:
    write(repo, ".gitignore", "build/\n")
    write(repo, "build/gen/out.txt", "x\n")

    engine = open_engine(repo / "build" / "gen", data_dir)
    capture = engine.capture()

    assert engine.entry(capture.tree, "build/gen/out.txt") is None, (
        "an ignored directory's files are not captured even when the engine is opened inside it"
    )


def test_outside_a_worktree_raises_not_a_worktree(
    tmp_path: Path, data_dir: Path, repo: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()

    with pytest.raises(NotAWorktree):
        Engine.open(plain, data_dir_path=data_dir)
    with pytest.raises(NotAWorktree):
        Engine.open(repo / ".git", data_dir_path=data_dir)
    assert not data_dir.exists() or not any(data_dir.rglob("HEAD")), (
        "no store should be created for a directory outside any worktree"
    )


# -- repeated captures -------------------------------------------------------


def test_no_change_capture_returns_same_tree(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)
    first = engine.capture().tree

    assert engine.capture().tree == first, "an unchanged worktree should give the same tree id"
    assert open_engine(repo, data_dir).capture().tree == first, (
        "a fresh Engine on the same store should give the same tree id too"
    )


def test_tree_id_matches_git_for_a_clean_checkout(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)

    tree = engine.capture().tree

    assert tree == git(repo, "rev-parse", "HEAD^{tree}").strip(), (
        "a clean checkout's snapshot should be exactly the commit's tree"
    )


def test_same_size_change_in_same_second_is_detected(repo: Path, data_dir: Path) -> None:
    path = write(repo, "racy.txt", "aaaa\n")
    engine = open_engine(repo, data_dir)
    engine.capture()  # captured immediately after the write: the racy case
    st = os.stat(path)
    write(repo, "racy.txt", "bbbb\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime

    tree = engine.capture().tree

    assert blob_at(engine, tree, "racy.txt") == b"bbbb\n", (
        "a same-size rewrite with an unchanged mtime must still be detected"
    )


def test_same_size_change_with_old_mtime_is_detected(repo: Path, data_dir: Path) -> None:
    path = write(repo, "old.txt", "aaaa\n")
    old = 1_600_000_000_000_000_000
    os.utime(path, ns=(old, old))  # not racy: the stat cache will trust it
    engine = open_engine(repo, data_dir)
    engine.capture()
    write(repo, "old.txt", "bbbb\n")
    os.utime(path, ns=(old, old))

    tree = engine.capture().tree

    assert blob_at(engine, tree, "old.txt") == b"bbbb\n", (
        "a rewrite that restores size and mtime must still be detected (ctime moved)"
    )


def test_capture_after_delete_drops_the_file(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)
    assert engine.entry(engine.capture().tree, "src/util.py") is not None, "fixture file captured"
    os.unlink(repo / "src" / "util.py")

    tree = engine.capture().tree

    assert engine.entry(tree, "src/util.py") is None, (
        "a deleted file should be gone from the next capture"
    )
    assert engine.entry(tree, "src/app.py") is not None, "its sibling should remain"


def test_directory_replaced_by_symlink_keeps_capturing(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)
    engine.capture()
    os.rename(repo / "src", repo / "real-src")
    os.symlink("real-src", repo / "src")

    tree = engine.capture().tree
    paths = listing(engine, tree)

    assert paths.get("src") == MODE_LINK, (
        "the directory turned symlink should be captured as a link"
    )
    assert "real-src/app.py" in paths, "the moved files should be captured at their new place"
    assert not any(p.startswith("src/") for p in paths), "nothing is captured through the link"
    assert engine.capture().tree == tree, "and the next capture should succeed with the same tree"


def test_symlink_replaced_by_directory(repo: Path, data_dir: Path) -> None:
    os.symlink("src", repo / "alias")
    engine = open_engine(repo, data_dir)
    engine.capture()
    os.unlink(repo / "alias")
    write(repo, "alias/real.txt", "now a directory\n")

    tree = engine.capture().tree

    assert mode_of(engine, tree, "alias") is None, "the old link should be gone"
    assert blob_at(engine, tree, "alias/real.txt") == b"now a directory\n", (
        "the directory's file should be captured"
    )


def test_incremental_captures_equal_fresh_captures(
    repo: Path, data_dir: Path, tmp_path: Path
) -> None:
    engine = open_engine(repo, data_dir)
    engine.capture()
    steps: list[Callable[[], object]] = [
        lambda: write(repo, "src/app.py", "print('bye')\n"),
        lambda: os.chmod(repo / "src/util.py", 0o755),
        lambda: os.symlink("src", repo / "alias"),
        lambda: os.unlink(repo / "README.md"),
        lambda: write(repo, "README.md/inside.md", "file became a directory\n"),
        lambda: shutil.rmtree(repo / "README.md"),
        lambda: write(repo, "README.md", "and a file again\n"),
        lambda: shutil.rmtree(repo / "src"),
        lambda: os.symlink("alias", repo / "src"),
    ]
    for number, step in enumerate(steps):
        step()
        incremental = engine.capture().tree
        fresh = open_engine(repo, tmp_path / f"fresh-{number}").capture().tree
        assert incremental == fresh, (
            f"after step {number} the incremental tree should equal a fresh one"
        )


def test_small_captures_pack_their_loose_objects(repo: Path, data_dir: Path) -> None:
    from snapshotter.git.packs import LOOSE_PACK_AT  # read, not changed: the real threshold

    engine = open_engine(repo, data_dir)
    objects = engine.store.root / "git" / "objects"
    trees = []
    # One capture writes a blob and ~5 trees: enough captures to pass the threshold.
    captures = LOOSE_PACK_AT // 5 + 20
    for i in range(captures):
        write(repo, f"deep/a/b/c{i % 3}.txt", f"version {i}\n")
        trees.append(engine.capture().tree)
        loose = [p for d in objects.glob("[0-9a-f][0-9a-f]") for p in d.iterdir()]
        # Never far past the threshold.
        assert len(loose) < LOOSE_PACK_AT + 8, f"capture {i} left {len(loose)} loose objects"
    assert list((objects / "pack").glob("pack-*.idx")), "they went into packs"
    for i, tree in enumerate(trees):  # every checkpoint is still whole
        assert blob_at(engine, tree, f"deep/a/b/c{i % 3}.txt") == f"version {i}\n".encode()
