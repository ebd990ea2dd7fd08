"""snapshotter/git/wildmatch.py: git's wildmatch(), cases from git's t3070-wildmatch.sh."""

from __future__ import annotations

import pytest

from snapshotter.git.wildmatch import compile_pattern


def matches(pattern: bytes, subject: bytes, icase: bool = False) -> bool:
    """As ignore.py asks: the subject folded when the rules are case-blind."""
    return compile_pattern(pattern, icase).matches(subject.lower() if icase else subject)


@pytest.mark.parametrize(
    ("pattern", "subject", "expected"),
    [
        (b"foo", b"foo", True),
        (b"foo", b"bar", False),
        (b"???", b"foo", True),
        (b"??", b"foo", False),
        (b"*", b"foo", True),
        (b"f*", b"foo", True),
        (b"*f", b"foo", False),
        (b"*foo*", b"foo", True),
        (b"*ob*a*r*", b"foobar", True),
        (b"*ab", b"aaaaaaabababab", True),
        (b"foo\\*", b"foo*", True),
        (b"foo\\*bar", b"foobar", False),
        (b"f\\\\oo", b"f\\oo", True),
        (b"t[a-g]n", b"ten", True),
        (b"t[!a-g]n", b"ten", False),
        (b"t[!a-g]n", b"ton", True),
        (b"t[^a-g]n", b"ton", True),
        (b"a[]]b", b"a]b", True),
        (b"a[]-]b", b"a-b", True),
        (b"a[]-]b", b"a]b", True),
        (b"a[]-]b", b"aab", False),
        (b"a[]a-]b", b"aab", True),
        (b"]", b"]", True),
        (b"[[:alpha:]][[:digit:]][[:upper:]]", b"a1B", True),
        (b"[[:digit:][:upper:][:space:]]", b"a", False),
        (b"[[:digit:][:upper:][:space:]]", b"A", True),
        (b"[[:xdigit:]]", b"f", True),
        (b"[[:xdigit:]]", b"g", False),
        (b"[a-c][[:punct:]]", b"b!", True),
    ],
)
def test_one_name(pattern: bytes, subject: bytes, expected: bool) -> None:
    assert matches(pattern, subject) is expected


@pytest.mark.parametrize(
    ("pattern", "subject", "expected"),
    [
        (b"*/foo", b"bar/foo", True),
        (b"foo/*", b"foo/bar", True),
        (b"foo/*", b"foo/bar/baz", False),  # with a slash, * stays in one directory
        (b"foo/?ar", b"foo/bar", True),
        (b"foo?bar/x", b"foo/bar/x", False),  # ? never matches a slash
        (b"foo[/]bar/x", b"foo/bar/x", False),
        (b"foo/**", b"foo/a/b", True),
        (b"foo/**", b"foo", False),
        (b"foo/**/bar", b"foo/bar", True),  # zero directories
        (b"foo/**/bar", b"foo/a/b/bar", True),
        (b"foo/**/bar", b"foo/abar", False),
        (b"**/foo/x", b"a/b/foo/x", True),
        (b"a/**b/c", b"a/xb/c", True),  # not its own segment: ** is a plain *
        (b"a/**b/c", b"a/x/b/c", False),
        # git 2.52: a pattern with a slash is matched whole; foo**/bar is foo*/bar.
        (b"foo**/bar", b"foo/bar", True),
        (b"foo**/bar", b"fooX/bar", True),
        (b"foo**/bar", b"foobar", False),
        (b"foo**/bar", b"fooX/Y/bar", False),
    ],
)
def test_a_path(pattern: bytes, subject: bytes, expected: bool) -> None:
    assert matches(pattern, subject) is expected


@pytest.mark.parametrize("pattern", [b"foo\\", b"[ab", b"a[]", b"[[:nope:]]", b"x/[z", b"!"])
def test_what_git_can_never_match_has_no_tokens(pattern: bytes) -> None:
    """Callers skip such a line (a trailing backslash, an unterminated bracket...)."""
    assert compile_pattern(pattern).tokens is None


def test_case_blind_rules_fold_all_but_an_escaped_letter_and_a_lone_bracket_letter() -> None:
    assert matches(b"*.TXT", b"A.txt", icase=True)
    assert matches(b"Dir/[A-Z]*.md", b"dir/readme.MD", icase=True)
    assert not matches(b"*.TXT", b"a.txt")
    assert not matches(b"\\Abc", b"Abc", icase=True)
    assert not matches(b"[A]bc", b"Abc", icase=True)
    assert matches(b"\\Abc", b"Abc")


def test_a_pattern_line_says_how_it_applies() -> None:
    negated_dir = compile_pattern(b"!build/")
    assert (negated_dir.negative, negated_dir.must_be_dir, negated_dir.basename) == (
        True,
        True,
        True,
    )
    assert negated_dir.literal == b"build"
    anchored = compile_pattern(b"/src/*.py")
    assert not anchored.basename and anchored.matches(b"src/a.py")
    assert (anchored.prefix, anchored.suffix) == (b"src/", b".py")
    anywhere = compile_pattern(b"**/node_modules")
    assert anywhere.basename and anywhere.literal == b"node_modules"
    for empty in (b"", b"!", b"/", b"//"):
        assert compile_pattern(empty).tokens is None


def test_many_stars_against_a_long_name_do_not_hang() -> None:
    """Issue 13: ``*a*a*a…b`` against a long name hung a backtracking regex (a hang
    fails the test through the tier's alarm; benchmarks, not tests, measure speed)."""
    name = b"a" * 20_000
    assert not matches(b"*a*a*a*a*a*a*a*a*a*a*b", name)
    assert not matches(b"x/" + b"*a" * 10 + b"*b", b"x/" + name)
    assert matches(b"*a*a*a*a*a*a*a*a*a*a*", name)
