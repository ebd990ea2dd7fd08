"""snapshotter/names.py: names as bytes on disk, str inside, quoted at the edges."""

from __future__ import annotations

import json
import os

import pytest

from snapshotter import names

UNDECODABLE = os.fsdecode(b"caf\xe9.txt")


@pytest.mark.parametrize(
    "name",
    ["plain.txt", "dir/é.txt", UNDECODABLE, '"quoted".txt', "tab\there", "back\\slash", ""],
)
def test_encode_then_decode_gives_the_same_bytes(name: str) -> None:
    text = names.encode(name)
    json.dumps(text)  # JSON can hold whatever encode writes
    assert os.fsencode(names.decode(text)) == os.fsencode(name)


def test_ordinary_names_are_stored_as_they_are() -> None:
    assert names.encode("src/app.py") == "src/app.py"
    assert names.encode("dir/é.txt") == "dir/é.txt"


def test_an_undecodable_name_is_stored_in_gits_quoted_form() -> None:
    assert names.encode(UNDECODABLE) == '"caf\\351.txt"'


def test_a_name_starting_with_a_quote_is_always_quoted() -> None:
    assert names.encode('"x') == '"\\"x"'
    assert names.decode(names.encode('"x')) == '"x'


def test_a_quoted_looking_text_that_quote_never_wrote_is_the_name_itself() -> None:
    assert names.decode('"a"b"') == '"a"b"'
    assert names.decode('"bad\\q"') == '"bad\\q"'


def test_display_quotes_what_git_status_quotes() -> None:
    assert names.display("a b.txt") == "a b.txt"
    assert names.display("new\nline") == '"new\\nline"'
    assert names.display(UNDECODABLE) == '"caf\\351.txt"'
    assert names.display("é") == "é"  # core.quotePath off: UTF-8 shown as is
