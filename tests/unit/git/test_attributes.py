"""snapshotter/git/attributes.py: ``.gitattributes`` lines, and what applies to a path.

Which attributes apply is checked against ``git check-attr`` in
tests/functional/test_seed_attributes.py; these pin the reading rules one at a time.
"""

from __future__ import annotations

from snapshotter.git.attributes import AttributeRules, parse


def states(data: bytes, *, macros: bool = True) -> list[tuple[str | None, tuple[object, ...]]]:
    """Each kept line as (its pattern text or macro name, its states)."""
    return [
        (line.macro if line.pattern is None else line.pattern.line.decode(), line.states)
        for line in parse(data, macros=macros)
    ]


def test_a_line_is_a_pattern_then_states() -> None:
    assert states(b"*.c text -diff !eol filter=lfs\n") == [
        ("*.c", (("text", True), ("diff", False), ("eol", None), ("filter", "lfs")))
    ]


def test_comments_blank_lines_bom_and_carriage_returns_are_skipped() -> None:
    data = b"\xef\xbb\xbf# comment\n\n   \n  *.sh\teol=lf\r\n"
    assert states(data) == [("*.sh", (("eol", "lf"),))]


def test_lines_git_rejects_are_left_out() -> None:
    data = b"!neg text\n*.bad ident b@d\n*.dash -\n*.ok ident\n"
    assert states(data) == [("*.ok", (("ident", True),))]


def test_a_quoted_pattern_is_c_unquoted() -> None:
    assert states(b'"with space/*.q" ident\n"tab\\there" text\n"\\101" text\n') == [
        ("with space/*.q", (("ident", True),)),
        ("tab\there", (("text", True),)),
        ("A", (("text", True),)),
    ]
    assert states(b'"bad\\q" text\n') == [('"bad\\q"', (("text", True),))], "kept as written"


def test_macros_count_only_where_allowed() -> None:
    data = b"[attr]sealed filter=rot -text\n"
    assert states(data) == [("sealed", (("filter", "rot"), ("text", False)))]
    assert states(data, macros=False) == []


def rules(**files: bytes) -> AttributeRules:
    per_dir = {
        name.replace("_", "/") if name != "top" else "": data for name, data in files.items()
    }
    return AttributeRules(wanted={"filter", "ident", "text"}, per_dir=per_dir)


def test_the_last_line_and_the_last_mention_win() -> None:
    found = rules(top=b"*.c filter=a\n*.c filter=b\n*.h -ident ident\n*.t text -text\n")
    assert found.lookup("x.c") == {"filter": "b"}
    assert found.lookup("x.h") == {"ident": True}
    assert found.lookup("x.t") == {"text": False}
    assert found.lookup("x.other") == {}


def test_the_nearest_directory_decides_each_attribute() -> None:
    found = AttributeRules(
        wanted={"filter", "ident"},
        per_dir={"": b"*.c filter=top ident\n", "src": b"*.c filter=src\n"},
        info=b"/src/special.c filter=info\n",
    )
    assert found.lookup("src/a.c") == {"filter": "src", "ident": True}
    assert found.lookup("a.c") == {"filter": "top", "ident": True}
    assert found.lookup("src/special.c") == {"filter": "info", "ident": True}


def test_patterns_match_as_in_gitignore() -> None:
    found = rules(top=b"/top.txt ident\ndocs/** filter=d\nonly-dir/ text\n", sub=b"*.x ident\n")
    assert found.lookup("top.txt") == {"ident": True}
    assert found.lookup("a/top.txt") == {}
    assert found.lookup("docs/a/b.md") == {"filter": "d"}
    assert found.lookup("only-dir") == {}, "a directory pattern never names a file"
    assert found.lookup("sub/a.x") == {"ident": True} and found.lookup("a.x") == {}


def test_a_macro_sets_its_attributes_where_nothing_nearer_did() -> None:
    found = AttributeRules(
        wanted={"filter", "text"},
        per_dir={
            "": b"[attr]lfs filter=lfs -text\n*.bin lfs\n*.half lfs text\n",
            "d": b"[attr]x text\n",
        },
    )
    assert found.lookup("a.bin") == {"filter": "lfs", "text": False}
    assert found.lookup("a.half") == {"filter": "lfs", "text": True}, "the line's own state wins"
    assert "x" not in found.macros, "a macro in a subdirectory is not honoured"
    assert AttributeRules(wanted={"text"}, per_dir={"": b"*.png binary\n"}).lookup("a.png") == {
        "text": False
    }, "the builtin binary macro"


def test_lines_about_other_attributes_cost_nothing() -> None:
    quiet = AttributeRules(wanted={"filter"}, per_dir={"": b"* text=auto\n*.sh eol=lf\n"})
    assert not quiet.says_anything() and quiet.lookup("a.sh") == {}
    assert AttributeRules(wanted={"filter"}, per_dir={"": b"*.x lfs\n"}).says_anything() is False
    assert AttributeRules(
        wanted={"filter"}, per_dir={"": b"[attr]lfs filter=lfs\n*.x lfs\n"}
    ).lookup("a.x") == {"filter": "lfs"}


def test_case_blind_rules() -> None:
    found = AttributeRules(wanted={"ident"}, per_dir={"": b"*.TXT ident\n"}, icase=True)
    assert found.lookup("A.txt") == {"ident": True}
    assert AttributeRules(wanted={"ident"}, per_dir={"": b"*.TXT ident\n"}).lookup("a.txt") == {}


def test_a_line_git_can_never_match_changes_nothing() -> None:
    found = AttributeRules(wanted={"filter"}, per_dir={"": b"[ab filter=x\n*.c filter=c\n"})
    assert found.lookup("a.c") == {"filter": "c"}
