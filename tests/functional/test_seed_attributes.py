"""Seeding decided per path from git attributes (attributes.py, seed.py; issue 16.1).

Two oracles: ``git check-attr`` for which attributes apply to a path, and a
capture with seeding off (every file read and hashed) for what a snapshot
must hold. How a file got into the store is read off the store itself: a
blob only in files hard-linked with the source's was seeded, one in the
store's own files was hashed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from builders import blob_at, git, make_repo, open_engine, write
from test_seed import hashed_tree, index_file, settle, stored

from snapshotter.git import index as gitindex
from snapshotter.git.attributes import AttributeRules, State

# -- the matcher against git check-attr ----------------------------------------------

ATTRS = (
    "text",
    "eol",
    "crlf",
    "filter",
    "ident",
    "working-tree-encoding",
    "diff",
    "merge",
    "sealed",
    "lfs",
    "binary",
    "custom",
)
ROOT_RULES = b"".join(
    [
        b"\xef\xbb\xbf# a BOM, then a comment\n",
        b"* text=auto\r\n",
        b"*.png binary\n",
        b"*.sh eol=lf\n",
        b"[attr]sealed filter=rot -text\n",
        b"[attr]lfs filter=lfs diff=lfs merge=lfs -text\n",
        b"[attr]binary -diff -text filter=overridden\n",  # redefines the builtin macro
        b"*.bin lfs\n",
        b"*.key sealed\n",
        b"*.half -sealed\n",
        b'"with space/*.q" ident\n',
        b"!negated text\n",  # negative patterns are ignored
        b"*.c -text text\n",  # inside one line the last mention wins
        b"*.h text -text\n",
        b"docs/** working-tree-encoding=UTF-16LE\n",
        b"/top.txt filter=top\n",
        b"only-dir/ ident\n",  # a directory pattern never names a file
        b"*.bad ident b@d\n",  # a bad attribute name drops the whole line
        b"*.BIG custom=upper\n",
        b"**/deep/*.x crlf=input\n",
    ]
)
SUB_RULES = b"".join(
    [
        b"*.txt eol=crlf !text\n",
        b"[attr]sealed ident\n",  # macros are not allowed below the top
        b"*.sh !eol\n",
        b"/x.txt ident\n",
        b"*.key !filter\n",
    ]
)
DEEP_RULES = b"*.png -binary filter=z\n*.md crlf=input\n*.key sealed\n"
INFO_RULES = b"sub/deep/*.c ident\n*.half filter=info\n"
GLOBAL_RULES = b"*.glob filter=global\n*.png diff=png\n"
PATHS = [
    "x.png",
    "sub/x.png",
    "sub/deep/x.png",
    "s.sh",
    "sub/s.sh",
    "sub/deep/s.sh",
    "f.bin",
    "sub/f.bin",
    "a.key",
    "sub/a.key",
    "sub/deep/a.key",
    "a.half",
    "with space/z.q",
    "negated",
    "x.c",
    "x.h",
    "sub/deep/x.c",
    "docs/a/b.txt",
    "top.txt",
    "sub/top.txt",
    "sub/x.txt",
    "sub/y.txt",
    "only-dir",
    "only-dir/f",
    "f.bad",
    "plain",
    "sub/deep/q.md",
    "CASE.big",
    "case.BIG",
    "a/deep/m.x",
    "deep/m.x",
    "x.glob",
    "sub/deep/x.glob",
]


def git_check_attr(root: Path, paths: list[str]) -> dict[str, dict[str, State]]:
    done = subprocess.run(
        ["git", "check-attr", "-z", "--stdin", *ATTRS],
        cwd=root,
        input="".join(f"{p}\0" for p in paths).encode(),
        capture_output=True,
        check=True,
    )
    fields = done.stdout.decode().split("\0")
    found: dict[str, dict[str, State]] = {p: {} for p in paths}
    for i in range(0, len(fields) - 2, 3):
        path, attr, value = fields[i : i + 3]
        if value != "unspecified":
            found[path][attr] = True if value == "set" else False if value == "unset" else value
    return found


@pytest.mark.parametrize("icase", [False, True], ids=["case", "ignorecase"])
def test_attribute_rules_agree_with_git_check_attr(tmp_path: Path, icase: bool) -> None:
    root = make_repo(tmp_path / "repo")
    write(root, ".gitattributes", ROOT_RULES)
    write(root, "sub/.gitattributes", SUB_RULES)
    write(root, "sub/deep/.gitattributes", DEEP_RULES)
    write(root, ".git/info/attributes", INFO_RULES)
    write(tmp_path, "global-attributes", GLOBAL_RULES)
    git(root, "config", "core.attributesFile", str(tmp_path / "global-attributes"))
    git(root, "config", "core.ignorecase", str(icase).lower())
    rules = AttributeRules(
        wanted=ATTRS,
        per_dir={"": ROOT_RULES, "sub": SUB_RULES, "sub/deep": DEEP_RULES},
        info=INFO_RULES,
        global_=GLOBAL_RULES,
        icase=icase,
    )
    expected = git_check_attr(root, PATHS)
    ours = {path: rules.lookup(path) for path in PATHS}
    assert ours == expected, "the same attributes as git check-attr, path by path"
    assert expected["sub/deep/a.key"] == {"sealed": True, "filter": "rot", "text": False}, (
        "sanity: a macro"
    )
    assert expected["x.png"]["filter"] == "overridden", "sanity: the redefined builtin"


def test_rules_that_say_nothing_about_the_wanted_attributes_cost_nothing() -> None:
    rules = AttributeRules(wanted=("filter",), per_dir={"": b"* text=auto\n*.png binary\n"})
    assert not rules.says_anything() and rules.lookup("a.png") == {}
    nested = b"[attr]sealed filter=rot\n[attr]vault sealed\n*.v vault\n"
    macro = AttributeRules(wanted=("filter",), per_dir={"": nested})
    assert macro.says_anything(), "a macro that leads to the attribute keeps its lines"
    assert macro.lookup("a.v") == {"filter": "rot"}


# -- seeding, path by path ---------------------------------------------------------

PLAIN = {f"src/m{i % 4}/f{i}.py": f"print({i})\n" * (i % 5 + 1) for i in range(70)}
ROT_CLEAN, ROT_SMUDGE = "tr a-z b-za", "tr b-za a-z"  # same size, other bytes


def rot_repo(root: Path, files: dict[str, str | bytes]) -> Path:
    """A repository with a ``rot`` filter configured (not yet applied to any path)."""
    make_repo(root)
    git(root, "config", "filter.rot.clean", ROT_CLEAN)
    git(root, "config", "filter.rot.smudge", ROT_SMUDGE)
    for rel, content in files.items():
        write(root, rel, content)
    return root


def commit_all(root: Path) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    settle(root)


SECRETS = {"keys/a.secret": "alpha bravo\n", "keys/b.secret": "charlie delta\n" * 3}


@pytest.mark.parametrize("where", ["top", "directory", "info", "attributesFile", "xdg", "macro"])
def test_a_filter_is_hashed_wherever_its_rule_lives(
    tmp_path: Path, data_dir: Path, hermetic: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    root = rot_repo(tmp_path / "repo", {**PLAIN, **SECRETS, "other.secret": "not in keys\n"})
    rule = "*.secret filter=rot\n"
    if where == "top":
        write(root, ".gitattributes", f"/keys/{rule}")
    elif where == "directory":
        write(root, "keys/.gitattributes", rule)  # not other.secret: it is above keys/
    elif where == "info":
        write(root, ".git/info/attributes", f"keys/{rule}")
    elif where == "attributesFile":
        write(tmp_path, "attrs", f"keys/{rule}")
        git(root, "config", "core.attributesFile", str(tmp_path / "attrs"))
    elif where == "xdg":
        write(hermetic / ".config" / "git", "attributes", f"keys/{rule}")
    else:
        write(
            root,
            ".gitattributes",
            "[attr]sealed filter=rot -text\n*.png binary\nkeys/*.secret sealed\n",
        )
    commit_all(root)
    stored_a = git(root, "cat-file", "blob", "HEAD:keys/a.secret")
    assert stored_a == "bmqib csbwp\n", "git stored the filtered bytes, of the same size"

    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    how = stored(engine, tree)
    for rel, content in SECRETS.items():
        assert blob_at(engine, tree, rel) == content.encode(), f"{rel}: the worktree's bytes"
        assert how.pop(rel) == "hashed", f"{rel}: filtered, so hashed"
    assert set(how.values()) == {"seeded"}, f"everything else is seeded: {how}"
    assert tree == hashed_tree(root, tmp_path / "data2", monkeypatch), "seeded == hashed"


def test_macros_binary_and_user_defined(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    png = b"\x89PNG\r\n\x1a\n\0\0" + bytes(range(256))  # CRLF and NUL: binary to git
    root = rot_repo(
        tmp_path / "repo",
        {**PLAIN, "img/a.png": png, "img/b.dat": "payload\n", "img/c.dat": "open\n"},
    )
    write(
        root,
        ".gitattributes",
        "* text=auto\n*.png binary\n"
        "[attr]sealed binary filter=rot\n*.dat sealed\n"
        "img/c.dat -sealed\n",
    )
    commit_all(root)
    assert git(root, "check-attr", "text", "filter", "--", "img/b.dat").split("\n")[:2] == [
        "img/b.dat: text: unset",
        "img/b.dat: filter: rot",
    ], "a macro inside a macro"

    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    how = stored(engine, tree)
    assert how.pop("img/b.dat") == "hashed", "sealed expands to a filter: hashed"
    assert blob_at(engine, tree, "img/b.dat") == b"payload\n"
    assert how.pop("img/a.png") == "seeded", "binary (-text) leaves the bytes as they are"
    assert how.pop("img/c.dat") == "seeded", "-sealed: no macro expansion, no filter"
    assert set(how.values()) == {"seeded"}
    assert tree == hashed_tree(root, tmp_path / "data2", monkeypatch)


def test_a_filter_dropped_from_the_worktree_attributes_still_hashes(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index's blobs were made under the committed rule, whatever the file says now."""
    root = rot_repo(tmp_path / "repo", {**PLAIN, **SECRETS})
    write(root, ".gitattributes", "*.secret filter=rot\n")
    commit_all(root)
    write(root, ".gitattributes", "# no filter any more\n")  # not added: the index keeps it
    entries = gitindex.read_entries(index_file(root).read_bytes())
    assert entries is not None
    entry = next(e for e in entries if e.path == "keys/a.secret")
    st = os.stat(root / "keys/a.secret")
    assert (entry.size, entry.mtime_ns) == (st.st_size, st.st_mtime_ns % 10**9), (
        "the index still vouches for the file, by stat data, with the filtered blob"
    )

    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    for rel, content in SECRETS.items():
        assert blob_at(engine, tree, rel) == content.encode(), f"{rel}: not the filtered blob"
    how = stored(engine, tree)
    assert {how.pop(rel) for rel in SECRETS} == {"hashed"}
    assert how.pop(".gitattributes") == "hashed", "it changed"
    assert set(how.values()) == {"seeded"}
    assert tree == hashed_tree(root, tmp_path / "data2", monkeypatch)


# -- fresh clones: a racy index, attributes as in real projects ------------------------

GLIBC_LIKE: dict[str, str | bytes] = {
    ".gitattributes": "* text=auto\n*.png binary\n*.sh eol=lf\n*.txt text eol=crlf\n",
    **PLAIN,
    **{f"scripts/s{i}.sh": f"#!/bin/sh\necho {i}\n" for i in range(8)},
    **{f"docs/n{i}.txt": f"line one\nline {i}\n" for i in range(6)},
    "img/logo.png": b"\x89PNG\r\n\x1a\n\0" + bytes(range(200)),
}


def fresh_clone(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    """A ``git clone`` (objects in a pack) whose index is racily clean throughout."""
    origin = make_repo(tmp_path / "origin", files)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--no-local", str(origin), str(clone))
    oldest = min(
        os.lstat(p).st_mtime_ns
        for p in clone.rglob("*")
        if ".git" not in p.relative_to(clone).parts
    )
    os.utime(index_file(clone), ns=(oldest, oldest))  # as if written in the files' second
    return clone


def test_a_fresh_clone_with_eol_attributes_seeds_all_but_what_checkout_converted(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clone = fresh_clone(tmp_path, GLIBC_LIKE)
    entries = gitindex.read_entries(index_file(clone).read_bytes())
    assert entries is not None
    index_s = os.stat(index_file(clone)).st_mtime_ns // 10**9
    assert all(e.mtime_s >= index_s for e in entries), "every entry is racily clean"
    assert (clone / "docs/n0.txt").read_bytes() == b"line one\r\nline 0\r\n", "eol=crlf"

    engine = open_engine(clone, data_dir)
    tree = engine.capture().tree
    how = stored(engine, tree)
    converted = {rel for rel in how if rel.endswith(".txt")}
    assert {how.pop(rel) for rel in converted} == {"hashed"}, "CRLF in the file, LF in git"
    assert len(how) == len(GLIBC_LIKE) - len(converted) and set(how.values()) == {"seeded"}, (
        f"everything else is seeded: {how}"
    )
    assert blob_at(engine, tree, "docs/n0.txt") == b"line one\r\nline 0\r\n"
    assert tree == hashed_tree(clone, tmp_path / "data2", monkeypatch), "seeded == hashed"


def test_a_source_gc_packing_while_we_link_loses_no_seeding(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git's ``gc --auto`` after a big commit packs the loose objects, then prunes them:
    a link made after the prune finds no loose object, and the new pack is used instead."""
    root = make_repo(tmp_path / "repo", PLAIN)
    settle(root)
    assert not list((root / ".git/objects/pack").glob("*.pack")), "every object is loose"
    real_link = os.link
    gc_ran: list[bool] = []

    def link_after_a_gc(src: object, dst: object, **kwargs: object) -> None:
        if not gc_ran:
            gc_ran.append(True)
            git(root, "repack", "-adq")
            git(root, "prune-packed")
        real_link(src, dst, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", link_after_a_gc)
    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    monkeypatch.setattr(os, "link", real_link)
    assert gc_ran, "the source was packed in the middle of the capture"
    assert set(stored(engine, tree).values()) == {"seeded"}, "seeded from the new pack"
    assert tree == git(root, "rev-parse", "HEAD^{tree}").strip()
