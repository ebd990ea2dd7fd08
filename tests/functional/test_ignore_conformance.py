"""Ignore-rule conformance: snapshotter must decide every path exactly as the git CLI does.

Each case is a real repository: ignore files (``.gitignore`` in any directory,
``$GIT_DIR/info/exclude``, ``core.excludesFile``), tracked and untracked files.
git is the oracle, asked two ways:

(a) per untracked path, ``git check-ignore --no-index`` (batched with
    ``--stdin -z -v -n``; a path is ignored when its last matching pattern is
    not a negation). check-ignore does not reliably report a path as ignored
    because a parent directory is excluded, so a path counts as ignored when it
    or any directory above it is;
(b) the set of files scan() captures must equal
    ``git ls-files --cached --others --exclude-standard`` (plus, for nested
    repositories git lists as ``dir/``, that repository's own listing).

Every case runs twice: as is, and with ``core.ignorecase=true`` in each
repository (git's default on macOS and Windows), git deciding both times.

The matcher follows git 2.52, which changed how ``**`` after a literal reads
(git commit 1940a02dc1, "match_pathname(): give fnmatch one char of prefix
context": ``foo**/bar`` no longer ignores ``foobar``). An older git cannot be
the oracle for those few paths: a case names git 2.52's answer for them in
``since_2_52``, used only when the git running the test is older.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from builders import git, write

from snapshotter.git.worktree import find_worktree
from snapshotter.store.walk import scan

Content = str | bytes


@dataclass(frozen=True)
class Case:
    id: str
    ignores: dict[str, Content]  # ignore file path (".gitignore", "a/.gitignore") -> contents
    files: tuple[str, ...]  # untracked files to create
    tracked: tuple[str, ...] = ()  # files to create and `git add -f`
    exclude: Content | None = None  # $GIT_DIR/info/exclude
    excludes_file: Content | None = None  # written to a file set as core.excludesFile
    excludes_file_config: str | None = None  # core.excludesFile value (default: that file)
    global_config: bool = False  # set core.excludesFile with `git config --global`
    xdg_ignore: Content | None = None  # the default $XDG_CONFIG_HOME/git/ignore
    xdg_unset: bool = False  # unset XDG_CONFIG_HOME (git falls back to ~/.config)
    nested: dict[str, dict[str, Content]] = field(default_factory=dict)  # dir -> {"exclude": ...}
    symlinks: dict[str, str] = field(default_factory=dict)  # link path -> target
    scope: str = ""  # run from this subdirectory
    known_gap: str = ""  # why snapshotter cannot agree yet (a strict xfail)
    since_2_52: dict[str, bool] = field(default_factory=dict)  # path -> ignored, git >= 2.52


def c(id: str, ignores: dict[str, Content] | Content, *files: str, **kw: object) -> Case:
    """A case; a plain string for ``ignores`` is the top ``.gitignore``."""
    rules = {".gitignore": ignores} if isinstance(ignores, str | bytes) else ignores
    return Case(id, rules, files, **kw)  # type: ignore[arg-type]


CASES = [
    # -- plain globs, *, ?, classes ------------------------------------------------
    c(
        "plain-name",
        "foo\n",
        "foo",
        "bar",
        "sub/foo",
        "sub/foobar",
        "foo.txt",
        "xfoo",
        "dir/foo/inside",
    ),
    c(
        "star-ext",
        "*.log\n",
        "a.log",
        "b.txt",
        "sub/c.log",
        "sub/deep/d.log",
        "log",
        ".log",
        "a.log.txt",
        "x.log/inner.txt",
    ),
    c("star-middle", "a*b\n", "ab", "axyb", "ba", "sub/acb", "abc", "a/b"),
    c("star-only-basename", "*\n", "a", "sub/b", ".hidden"),
    c("question", "?.txt\n", "a.txt", "ab.txt", ".txt", "sub/b.txt", "é.txt", "ü"),
    c("question-multibyte", "caf?\n??\n", "café", "cafe", "é", "ab", "abc"),
    c("class-range", "[a-c].txt\n", "a.txt", "b.txt", "d.txt", "A.txt", "[a-c].txt", "ab.txt"),
    c(
        "class-negated",
        "[!a-c]*.md\nfile[^0-9]\n",
        "a.md",
        "d.md",
        "zz.md",
        "file1",
        "filex",
        "sub/b.md",
        "sub/e.md",
    ),
    c(
        "class-posix",
        "[[:digit:]]*\nx[[:upper:]]\ny[[:alpha:][:digit:]]\nz[[:space:]]\n",
        "1a",
        "a1",
        "xA",
        "xa",
        "yb",
        "y7",
        "y_",
        "z ",
        "z\t",
        "zz",
    ),
    c(
        "class-posix-more",
        "c[[:cntrl:]]\np[[:punct:]]\ns[[:space:]]\nh[[:xdigit:]]\nl[[:lower:]]\n"
        "r[[:print:]]\ng[[:graph:]]\nb[[:blank:]]\nn[[:alnum:]]\n",
        "c\x01",
        "c\x7f",
        "ca",
        "p!",
        "p~",
        "p_",
        "pa",
        "s\x0b",
        "s\x0c",
        "s\n",
        "s\r",
        "sa",
        "hF",
        "hg",
        "lq",
        "lQ",
        "r ",
        "r\x01",
        "g ",
        "g!",
        "b\t",
        "b\n",
        "n9",
        "n-",
    ),
    c("class-posix-bad", "q[[:nope:]]\nw[[:alpha:]\nok\n", "qa", "q:", "wa", "w[", "w[a", "ok"),
    c("class-bracket-first", "[]]x\n[!]]y\n", "]x", "ax", "]y", "ay"),
    c("class-escape", "[\\]]z\n[a\\-c]w\n", "]z", "\\z", "az", "-w", "bw", "cw"),
    c("class-dash-literal", "[-a]1\n[a-]2\n", "-1", "a1", "b1", "-2", "a2", "b2"),
    c("class-unterminated", "[abc\nok[\nplain\n", "[abc", "a", "ok[", "ok", "plain"),
    c("class-slash", "a[/]b\n", "a/b", "ab"),
    c("escaped-glob", "a\\[b]\n\\a\\*\n", "a[b]", "ab", "a*", "aa"),
    c("double-star-not-boundary", "a**b\n", "ab", "axxb", "a/b", "a/xb", "ba"),
    # -- ** -------------------------------------------------------------------------
    c("starstar-leading", "**/foo\n", "foo", "a/foo", "a/b/foo", "c/foo/x", "foobar", "a/xfoo"),
    c(
        "starstar-leading-path",
        "**/foo/bar\n",
        "foo/bar",
        "a/foo/bar",
        "a/b/foo/bar",
        "foo/baz",
        "a/foo/baz",
        "bar",
    ),
    c("starstar-trailing", "abc/**\n", "abc/x", "abc/d/y", "xabc/x", "sub/abc/x", "abcd"),
    c("starstar-trailing-negate", "abc/**\n!abc/keep\n", "abc/keep", "abc/drop", "abc/d/keep"),
    c(
        "starstar-middle",
        "a/**/b\n",
        "a/b",
        "a/x/b",
        "a/x/y/b",
        "a/bb",
        "x/a/b",
        "a/x/b2/c",
        "a/q/b/c",
    ),
    c("starstar-alone", "**\n!*.keep\n", "x.keep", "y.txt", "dir/z.keep"),
    c("starstar-dir", "**/\n", "top.txt", "d/x", "d/e/y"),
    c("star-dir", "*/\n", "top.txt", "d/x", "d/e/y"),
    c(
        "starstar-after-literal",
        "foo**/bar\n",
        "foo/bar",
        "fooa/bar",
        "foo/x/bar",
        "fooa/x/bar",
        "xfoo/bar",
        "foobar",
        since_2_52={"foo/x/bar": False, "fooa/x/bar": False, "foobar": False},
    ),
    c(
        "starstar-anchored-after-literal",
        "/foo**\n!foo/\n",
        "foo/bba/arr",
        "foo/y",
        "foox",
        since_2_52={"foo/bba/arr": False, "foo/y": False},
    ),
    c("starstar-end-after-literal", "a/b**\n", "a/b", "a/bc", "a/bx/y", "a/c", "a/xb"),
    c("triple-star", "x/***/y\n***.tmp\n", "x/y", "x/q/y", "x/q/r/y", "a.tmp", "d/b.tmp"),
    c("starstar-escaped-slash", "a/**\\/b\n", "a/b", "a/x/b", "a/x/y/b"),
    c("star-slash-anchored", "*/foo\n", "foo", "a/foo", "a/b/foo"),
    c("middle-star-segment", "a/*/c\n", "a/b/c", "a/b/d/c", "a/c", "x/a/b/c"),
    c("starstar-trailing-dir", "foo/**/\n", "foo/a", "foo/d/b", "foo/d/e/c"),
    # -- anchoring --------------------------------------------------------------------
    c("anchored-leading-slash", "/foo\n/bar/\n", "foo", "sub/foo", "bar/x", "sub/bar/x", "foobar"),
    c(
        "anchored-middle-slash",
        "doc/*.txt\n",
        "doc/a.txt",
        "doc/sub/b.txt",
        "x/doc/c.txt",
        "doc/a.md",
    ),
    c(
        "anchored-in-subdir",
        {"sub/.gitignore": "/foo\nx/y\n"},
        "foo",
        "sub/foo",
        "sub/a/foo",
        "sub/x/y",
        "x/y",
        "sub/z/x/y",
    ),
    c(
        "relative-to-own-dir",
        {"sub/.gitignore": "*.o\n"},
        "a.o",
        "sub/b.o",
        "sub/deep/c.o",
        "other/d.o",
    ),
    c("anchored-range", "/[0-9]*/data\n", "1x/data", "a/data", "sub/2/data", "22/data"),
    c("root-slash-only", "/\n!/\n//\n", "a", "b/c"),
    # -- directory-only ---------------------------------------------------------------
    c("dir-only", "build/\n", "build", "sub/build/x", "sub2/build", "builds/y"),
    c("dir-only-symlink", "link/\nreal/\n", "real/x", symlinks={"link": "real", "real2": "real"}),
    c("dir-only-anchored", "/out/\n", "out/x", "sub/out/y", "out2"),
    c("dir-only-path", "a/b/\n", "a/b/c", "a/bb", "x/a/b/c", "a/c"),
    c("dir-only-glob", "*.d/\n", "x.d/y", "z.d", "sub/w.d/v"),
    c("dir-double-slash", "foo//\n", "foo/x", "bar/foo/y"),
    # -- negation -----------------------------------------------------------------------
    c("negation", "*.log\n!keep.log\n", "a.log", "keep.log", "sub/keep.log", "sub/x.log"),
    c("negation-order", "!keep.log\n*.log\n", "a.log", "keep.log"),
    c(
        "negation-under-excluded-dir",
        "build/\n!build/keep.txt\n!keep2.txt\n",
        "build/keep.txt",
        "build/keep2.txt",
        "build/other",
    ),
    c(
        "negation-docs-example",
        "/*\n!/foo\n/foo/*\n!/foo/bar\n",
        "foo/bar/x",
        "foo/baz/y",
        "top.txt",
        "other/z",
        "foo/f.txt",
    ),
    c("negation-dir-only", "*.o\n!build/\n", "build/x.o", "build/y.c", "a.o", "sub/build"),
    c("negation-all-but-dirs", "*\n!*/\n!*.py\n", "a.py", "a.txt", "d/b.py", "d/c.txt", "d/e/f.py"),
    c("negation-keep-subdir", "sub/*\n!sub/keep/\n", "sub/a", "sub/keep/b", "sub/other/c"),
    c("negation-last-wins", "a*\n!ab*\nabc*\n!abcd*\n", "a1", "ab1", "abc1", "abcd1"),
    c("negation-dir-vs-file", "build\n!build/\n", "build", "sub/build/x"),
    c("negation-empty", "!\nx\n!/\n", "x", "y", "!"),
    c("negation-reinclude-parent-excluded", "/a/\n!/a/b/\n!/a/b/c\n", "a/b/c", "a/d"),
    # -- nested .gitignore files ---------------------------------------------------------
    c(
        "nested-override",
        {".gitignore": "*.tmp\n", "sub/.gitignore": "!*.tmp\n"},
        "a.tmp",
        "sub/b.tmp",
        "sub/deep/c.tmp",
        "other/d.tmp",
    ),
    c(
        "nested-reignore",
        {".gitignore": "*.dat\n!keep.dat\n", "sub/.gitignore": "keep.dat\n"},
        "keep.dat",
        "sub/keep.dat",
        "sub/x.dat",
        "sub/deep/keep.dat",
    ),
    c("nested-in-excluded-dir", {".gitignore": "sub/\n", "sub/.gitignore": "!x\n"}, "sub/x"),
    c(
        "nested-negation-falls-through",
        {".gitignore": "*.o\n", "sub/.gitignore": "!build\n"},
        "sub/build/x.o",
        "sub/build/y.c",
        "sub/z.o",
    ),
    c(
        "nested-three-levels",
        {".gitignore": "*.a\n", "a/.gitignore": "!*.a\n*.b\n", "a/b/.gitignore": "!*.b\n"},
        "x.a",
        "x.b",
        "a/x.a",
        "a/x.b",
        "a/b/x.a",
        "a/b/x.b",
    ),
    c(
        "nested-starstar",
        {"sub/.gitignore": "**/z\nq/**\n!q/keep\n"},
        "z",
        "sub/z",
        "sub/a/z",
        "q/x",
        "sub/q/x",
        "sub/q/d/y",
        "sub/q/keep",
        "sub/a/q/w",
    ),
    c(
        "nested-dir-only-override",
        {".gitignore": "cache/\n", "p/.gitignore": "!cache/\n"},
        "cache/a",
        "p/cache/b",
        "p/q/cache/c",
    ),
    # -- escapes, whitespace, comments, line endings --------------------------------------
    c(
        "escaped-hash-bang",
        "\\#foo\n\\!bar\n#comment\n",
        "#foo",
        "!bar",
        "comment",
        "#comment",
        "foo",
        "bar",
    ),
    c("comment-not-at-start", " #x\nfoo#\n", " #x", "#x", "foo#", "foo"),
    c(
        "trailing-spaces",
        "foo   \nbar\\ \nbaz\\  \nq\\ \\ \n",
        "foo",
        "foo   ",
        "bar ",
        "bar",
        "baz ",
        "baz",
        "baz  ",
        "q  ",
        "q",
    ),
    c("trailing-tab", "qux\t\n", "qux", "qux\t"),
    c("leading-spaces", "  lead\n", "  lead", "lead"),
    c("escaped-space-only", "\\ \n", " ", "a"),
    c("blank-and-whitespace-lines", "\n   \n\t\nx\n\n", "x", "y", "\t"),
    c(
        "crlf",
        b"*.txt\r\n!keep.txt\r\nbuild/\r\n# c\r\n\r\n",
        "a.txt",
        "keep.txt",
        "build/x",
        "other.md",
        "a.txt\r",
    ),
    c("crlf-trailing-space", b"foo \r\nbar\\ \r\n", "foo", "foo ", "bar ", "bar"),
    c("double-cr", b"x\r\r\ny\r\n", "x", "x\r", "y", "y\r"),
    c("no-final-newline", b"foo\nbar", "foo", "bar", "baz"),
    c("no-final-newline-cr", b"foo\r", "foo", "foo\r"),
    c("utf8-bom", b"\xef\xbb\xbfbom.txt\n\xef\xbb\xbfz\n", "bom.txt", "z", "\ufeffz"),
    c("trailing-backslash", "foo\\\nbar\n", "foo\\", "foo", "bar"),
    c("dotfiles", ".*\n!.gitignore\n", ".env", ".hidden/x", "a.txt", "sub/.rc"),
    c("spaces-in-names", "my file.txt\n", "my file.txt", "my", "file.txt"),
    c("unicode-names", "café\n*.ß\n", "café", "cafe", "x.ß", "sub/café"),
    c(
        "gitignore-ignores-itself",
        {".gitignore": ".gitignore\n", "sub/.gitignore": "x\n"},
        "sub/x",
        "y",
    ),
    c(
        "symlinked-gitignore",
        {"rules.txt": "x.txt\n"},
        "sub/x.txt",
        "x.txt",
        symlinks={"sub/.gitignore": "../rules.txt"},
    ),
    # -- case sensitivity (each case also runs with core.ignorecase) --------------------------
    c(
        "case-sensitive",
        "*.TXT\nReadme\nDIR/\n",
        "a.txt",
        "b.TXT",
        "readme",
        "Readme",
        "README",
        "dir/x",
        "DIR/y",
    ),
    c(
        "case-prefix-and-path",
        "Build*/\n/Docs/*.MD\nsrc/Gen/\n**/Out\n",
        "build1/a",
        "BUILD2/b",
        "docs/x.md",
        "DOCS/y.Md",
        "src/gen/c",
        "SRC/GEN/d",
        "p/out",
        "q/OUT/e",
    ),
    c(
        "case-brackets",
        "[A-C]1\n[a]2\n[A]3\n[[:upper:]]4\n[[:lower:]]5\n[!b]6\n[Z-a]7\n",
        "a1",
        "B1",
        "d1",
        "a2",
        "A2",
        "a3",
        "A3",
        "a4",
        "Q4",
        "4",
        "a5",
        "Q5",
        "b6",
        "B6",
        "c6",
        "z7",
        "Z7",
        "_7",
        "y7",
    ),
    c("case-escapes", "\\Ab\nx\\y\n\\*Q\n", "Ab", "ab", "AB", "xy", "XY", "*q", "*Q"),
    c("case-negation", "*.LOG\n!Keep.log\n", "a.log", "B.LOG", "keep.log", "KEEP.LOG"),
    # -- $GIT_DIR/info/exclude, core.excludesFile ----------------------------------------
    c("info-exclude", {}, "a.secret", "sub/b.secret", "c.txt", exclude="*.secret\n"),
    c(
        "info-exclude-anchored",
        {},
        "top.txt",
        "sub/top.txt",
        "sub/a.c",
        "x/sub/a.c",
        "cache/z",
        "d/cache/w",
        exclude="/top.txt\nsub/*.c\ncache/\n",
    ),
    c(
        "gitignore-beats-info-exclude",
        "!keep.x\n*.y\n",
        "keep.x",
        "a.x",
        "z.y",
        "w.y",
        exclude="*.x\n!z.y\n",
    ),
    c(
        "info-exclude-beats-excludesfile",
        "!x.bak\n",
        "keep.tmp",
        "a.tmp",
        "x.bak",
        "y.bak",
        "keep.bak",
        exclude="*.tmp\n!keep.bak\n",
        excludes_file="*.bak\n!keep.tmp\n",
    ),
    c("excludesfile-config", {}, "a.swp", "sub/b.swp", "c.txt", excludes_file="*.swp\n"),
    c(
        "excludesfile-tilde",
        {},
        "a.tilde",
        "b.txt",
        excludes_file="*.tilde\n",
        excludes_file_config="~/custom-ignore",
    ),
    c(
        "excludesfile-global-config",
        {},
        "a.glob",
        "b.txt",
        excludes_file="*.glob\n",
        global_config=True,
    ),
    c("excludesfile-xdg-default", {}, "a.xdg", "sub/b.xdg", "c.txt", xdg_ignore="*.xdg\n"),
    c("excludesfile-xdg-unset", {}, "a.xdg", "c.txt", xdg_ignore="*.xdg\n", xdg_unset=True),
    c(
        "excludesfile-config-beats-xdg",
        {},
        "a.xdg",
        "a.cfg",
        excludes_file="*.cfg\n",
        xdg_ignore="*.xdg\n",
    ),
    c(
        "excludesfile-missing-no-xdg",
        {},
        "a.xdg",
        excludes_file_config="~/does-not-exist",
        xdg_ignore="*.xdg\n",
    ),
    c("excludesfile-crlf", {}, "a.e", "b.f", "keep.e", excludes_file=b"*.e\r\n!keep.e\r\n"),
    # -- tracked files matching ignore rules -------------------------------------------------
    c(
        "tracked-ignored",
        "*.log\nbuild/\n",
        "b.log",
        "build/u.txt",
        "build/sub/v.txt",
        tracked=("a.log", "build/t.txt"),
    ),
    c(
        "tracked-in-excluded-dir-negation",
        "out/\n!out/keep\n",
        "out/keep",
        "out/x",
        tracked=("out/t",),
    ),
    c(
        "tracked-deep-in-excluded-dir",
        "a/\n",
        "a/b/c/u.txt",
        "a/b/v.txt",
        "a/w",
        tracked=("a/b/c/t.txt",),
    ),
    c(
        "tracked-gitignore-in-excluded-dir",
        {".gitignore": "vendor/\n", "vendor/.gitignore": "!*\n"},
        "vendor/new.py",
        tracked=("vendor/lib.py", "vendor/.gitignore"),
    ),
    c("tracked-by-info-exclude", {}, "u.secret", tracked=("t.secret",), exclude="*.secret\n"),
    c("tracked-dir-only-pattern-files", "*\n", "new", tracked=("keep/a", ".gitignore")),
    # -- nested repositories start their own rules ----------------------------------------------
    c(
        "nested-repo",
        {".gitignore": "*.gen\n", "nested/.gitignore": "*.tmp\n"},
        "top.gen",
        "top.tmp",
        "nested/a.gen",
        "nested/b.tmp",
        "nested/c.txt",
        nested={"nested": {}},
    ),
    c("nested-repo-ignored-by-parent", "vendor/\n", "vendor/lib/x", "y", nested={"vendor/lib": {}}),
    c(
        "nested-repo-info-exclude",
        {},
        "a.n",
        "inner/a.n",
        "inner/b.top",
        exclude="*.top\n",
        nested={"inner": {"exclude": "*.n\n"}},
    ),
    c(
        "nested-repo-excludesfile",
        {},
        "a.g",
        "inner/b.g",
        "inner/c.txt",
        excludes_file="*.g\n",
        nested={"inner": {}},
    ),
    c(
        "excludesfile-relative",
        {"relative-excludes-file": "*.rel\n"},
        "a.rel",
        "sub/b.rel",
        excludes_file_config="relative-excludes-file",
    ),
    # -- starting below the worktree root -------------------------------------------------------
    c(
        "scope-subdir",
        {".gitignore": "*.o\n/sub/gen/\n", "sub/.gitignore": "!keep.o\n"},
        "sub/a.o",
        "sub/keep.o",
        "sub/gen/x",
        "sub/c.txt",
        "top.txt",
        scope="sub",
    ),
    c(
        "scope-deep",
        {".gitignore": "*.x\n", "a/.gitignore": "!b/*.x\n"},
        "a/b/c/1.x",
        "a/b/2.x",
        "a/b/c/d.txt",
        scope="a/b/c",
    ),
    c(
        "scope-in-excluded-dir",
        "build/\n",
        "build/x/u.txt",
        "build/x/y/z",
        tracked=("build/x/t.txt",),
        scope="build/x",
    ),
]


def run(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False)
    if done.returncode not in (0, 1):
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr.decode()}")
    return done.stdout


def nul_split(data: bytes) -> list[str]:
    return [p.decode("utf-8", "surrogateescape") for p in data.split(b"\0")[:-1]]


@functools.cache
def git_version() -> tuple[int, int]:
    found = re.findall(r"\d+", run(Path.cwd(), "--version").decode())
    return int(found[0]), int(found[1])


def build(
    root: Path, home: Path, case: Case, monkeypatch: pytest.MonkeyPatch, icase: bool = False
) -> None:
    git(root, "init", "-q", "--template=", "-b", "main")
    git(root, "config", "core.ignorecase", str(icase).lower())
    for repo_dir, extra in case.nested.items():
        (root / repo_dir).mkdir(parents=True)
        git(root / repo_dir, "init", "-q", "--template=", "-b", "main")
        git(root / repo_dir, "config", "core.ignorecase", str(icase).lower())
        if "exclude" in extra:
            write(root / repo_dir, ".git/info/exclude", extra["exclude"])
    for rel, text in case.ignores.items():
        write(root, rel, text)
    for rel in (*case.files, *case.tracked):
        if rel not in case.ignores:
            write(root, rel, f"content of {rel}\n")
    for link, target in case.symlinks.items():
        (root / link).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / link)
    if case.exclude is not None:
        write(root, ".git/info/exclude", case.exclude)
    if case.xdg_ignore is not None:
        write(home, ".config/git/ignore", case.xdg_ignore)
    if case.xdg_unset:
        monkeypatch.delenv("XDG_CONFIG_HOME")
    configured = case.excludes_file_config
    if case.excludes_file is not None:
        write(home, "custom-ignore", case.excludes_file)
        configured = configured or str(home / "custom-ignore")
    if configured is not None:
        git(
            root,
            "config",
            *(["--global"] if case.global_config else []),
            "core.excludesFile",
            configured,
        )
    if case.tracked:
        git(root, "add", "-f", "--", *case.tracked)


def repo_of(path: str, case: Case) -> str:
    """The innermost repository (worktree-relative, "" for the top) that holds ``path``."""
    holders = [r for r in case.nested if path.startswith(r + "/")]
    return max(holders, key=len, default="")


def git_ignored(root: Path, case: Case, paths: list[str]) -> dict[str, bool]:
    """Per path: ignored by git itself or because a directory above it is."""
    queries = {p for path in paths for p in ancestors_and_self(path)}
    by_repo: dict[str, list[str]] = {}
    for p in sorted(queries):
        by_repo.setdefault(repo_of(p, case), []).append(p)
    direct: dict[str, bool] = {}
    for repo, group in by_repo.items():
        cut = len(repo) + 1 if repo else 0
        stdin = b"".join(p[cut:].encode("utf-8", "surrogateescape") + b"\0" for p in group)
        out = nul_split(
            run(root / repo, "check-ignore", "--no-index", "--stdin", "-z", "-v", "-n", stdin=stdin)
        )
        assert len(out) == 4 * len(group), f"unexpected check-ignore output {out!r}"
        for i, p in enumerate(group):
            _source, _line, pattern, name = out[4 * i : 4 * i + 4]
            assert name == p[cut:], f"check-ignore answered for {name!r}, asked {p[cut:]!r}"
            direct[p] = bool(pattern) and not pattern.startswith("!")
    return {p: any(direct[a] for a in ancestors_and_self(p)) for p in paths}


def ancestors_and_self(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def git_project_files(root: Path, case: Case) -> set[str]:
    """What git considers part of the project, nested repositories expanded."""
    cwd = root / case.scope if case.scope else root
    listed = nul_split(
        run(cwd, "ls-files", "-z", "--full-name", "--cached", "--others", "--exclude-standard")
    )
    found = {p for p in listed if not p.endswith("/")}
    for repo in case.nested:
        if f"{repo}/" in listed:
            inner = nul_split(
                run(root / repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
            )
            found |= {f"{repo}/{p}" for p in inner}
    return found


PARAMS = [
    pytest.param(
        case,
        id=case.id,
        marks=[pytest.mark.xfail(strict=True, reason=case.known_gap)] if case.known_gap else [],
    )
    for case in CASES
]


def newer_git(case: Case) -> dict[str, bool]:
    """git 2.52's answers that the git running the test cannot give (see the module doc)."""
    return case.since_2_52 if git_version() < (2, 52) else {}


@pytest.mark.parametrize("icase", [False, True], ids=["matchcase", "ignorecase"])
@pytest.mark.parametrize("case", PARAMS)
def test_ignore_rules_match_git(
    case: Case, icase: bool, tmp_path: Path, hermetic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    build(root, hermetic, case, monkeypatch, icase)
    tree = find_worktree(root / case.scope if case.scope else root)
    captured = set(scan(tree, previous=frozenset(), max_new_file_size=1 << 40).entries)

    disagreements = []
    in_scope = [p for p in (*case.files, *case.symlinks) if tree.in_scope(p)]
    answers = {**git_ignored(root, case, in_scope), **newer_git(case)}
    for path, ignored in answers.items():
        if ignored == (path in captured):
            disagreements.append(
                f"(a) {path!r}: git says {'ignored' if ignored else 'not ignored'}, "
                f"snapshotter {'captured' if path in captured else 'left it out'}"
            )
    expected = git_project_files(root, case)
    expected |= {p for p, ignored in newer_git(case).items() if not ignored}
    expected -= {p for p, ignored in newer_git(case).items() if ignored}
    disagreements += [
        f"(b) {p!r}: git lists it, scan() left it out" for p in sorted(expected - captured)
    ]
    disagreements += [
        f"(b) {p!r}: scan() captured it, git does not list it" for p in sorted(captured - expected)
    ]
    assert not disagreements, (
        f"snapshotter disagrees with git on {len(disagreements)} path(s) "
        f"(core.ignorecase={icase}) for rules "
        f"{case.ignores!r} (info/exclude={case.exclude!r}, core.excludesFile="
        f"{case.excludes_file_config or case.excludes_file!r}, xdg={case.xdg_ignore!r}):\n  "
        + "\n  ".join(disagreements)
    )


def test_batched_oracle_reads_check_ignore_like_its_exit_code(
    tmp_path: Path, hermetic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batched ``check-ignore -v -n`` answer equals ``check-ignore -q`` per path."""
    case = next(case for case in CASES if case.id == "negation-docs-example")
    root = tmp_path / "repo"
    root.mkdir()
    build(root, hermetic, case, monkeypatch)
    paths = ["foo", "foo/bar", "foo/baz", "other", "top.txt", "foo/f.txt"]
    exit_codes = {
        p: subprocess.run(
            ["git", "check-ignore", "-q", "--no-index", p], cwd=root, check=False
        ).returncode
        == 0
        for p in paths
    }
    batched = git_ignored(root, case, paths)
    assert batched == exit_codes, "the batched oracle should read check-ignore as -q does"
    assert exit_codes["foo/baz"] and not exit_codes["foo/bar"], "the case should mix answers"


def test_enough_cases() -> None:
    pairs = sum(len(case.files) + len(case.tracked) + len(case.symlinks) for case in CASES)
    assert len(CASES) >= 50 and pairs >= 100, f"only {len(CASES)} repositories, {pairs} paths"
