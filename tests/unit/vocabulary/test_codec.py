"""snapshotter/codec.py: JSON derived from a dataclass's fields, read exactly as written.

The byte format of state.json and the lenient reading's agreement are
tests/functional/test_state_file.py's; these pin what ``read`` takes and refuses, one
kind of annotation at a time.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from snapshotter import codec
from snapshotter.codec import Odd
from snapshotter.names import Name

UNDECODABLE = os.fsdecode(b"caf\xe9.txt")


@dataclass
class Leaf:
    name: Name
    size: int = 0


@dataclass(kw_only=True)
class Every:
    """One field of each kind the codec knows."""

    text: str
    count: int
    flag: bool
    maybe: str | None = None
    choice: Literal["a", "b"] = "a"
    number_choice: Literal[1, 2] = 1
    maybe_choice: Literal[1, 2] | None = None  # (read by a reader of its own, not inline)
    choices: list[Literal["x", "y"]] = field(default_factory=list)
    path: Name = ""
    paths: list[Name] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    leaves: list[Leaf] = field(default_factory=list)
    by_path: dict[Name, tuple[str, int]] = field(default_factory=dict)
    leaf: Leaf | None = None


FULL = Every(
    text="t",
    count=3,
    flag=True,
    maybe="m",
    choice="b",
    number_choice=2,
    maybe_choice=2,
    choices=["y", "x"],
    path=UNDECODABLE,
    paths=["plain", UNDECODABLE],
    counts=[1, 2],
    leaves=[Leaf(UNDECODABLE, 5)],
    by_path={UNDECODABLE: ("r", 1)},
    leaf=Leaf("x"),
)


def document() -> dict[str, Any]:
    """FULL as JSON text would hand it back."""
    found: dict[str, Any] = json.loads(json.dumps(codec.write(FULL)))
    return found


def test_every_kind_of_field_round_trips_through_json_text() -> None:
    assert codec.read(Every, document()) == FULL


def test_fields_are_written_in_class_order_names_quoted_tuples_as_arrays() -> None:
    written = document()
    assert list(written) == [
        "text",
        "count",
        "flag",
        "maybe",
        "choice",
        "number_choice",
        "maybe_choice",
        "choices",
        "path",
        "paths",
        "counts",
        "leaves",
        "by_path",
        "leaf",
    ]
    quoted = '"caf\\351.txt"'
    assert written["path"] == quoted and written["paths"] == ["plain", quoted]
    assert written["leaves"] == [{"name": quoted, "size": 5}]
    assert written["by_path"] == {quoted: ["r", 1]}


def test_a_field_with_a_default_may_be_left_out_one_without_may_not() -> None:
    assert codec.read(Every, {"text": "t", "count": 0, "flag": False}) == Every(
        text="t", count=0, flag=False
    )
    with pytest.raises(Odd):
        codec.read(Every, {"text": "t", "count": 0})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("count", True),  # a bool is no int in JSON
        ("count", 1.0),
        ("count", "3"),
        ("flag", 1),
        ("text", None),
        ("maybe", 3),
        ("choice", "c"),
        ("number_choice", True),  # True == 1, but not in JSON
        ("maybe_choice", True),
        ("maybe_choice", 3),
        ("choices", ["z"]),
        ("choices", "x"),
        ("path", 7),
        ("paths", "plain"),
        ("paths", ["ok", 1]),
        ("counts", [1, "2"]),
        ("leaves", [{"name": "x", "size": 1, "extra": 0}]),
        ("by_path", {"p": ["r"]}),  # a tuple's array has its length
        ("by_path", {"p": ["r", 1, 2]}),
        ("by_path", []),
        ("leaf", "x"),
        ("unknown", 1),  # no other key
    ],
)
def test_anything_not_exactly_as_written_is_odd(key: str, value: object) -> None:
    with pytest.raises(Odd):
        codec.read(Every, {**document(), key: value})


@pytest.mark.parametrize("value", [[], "x", None, 3])
def test_a_document_that_is_no_object_is_odd(value: object) -> None:
    with pytest.raises(Odd):
        codec.read(Leaf, value)


def test_a_name_json_holds_as_is_stays_as_is() -> None:
    assert codec.write(Leaf("dir/é.txt")) == {"name": "dir/é.txt", "size": 0}
    assert codec.read(Leaf, {"name": '"\\"q"'}) == Leaf('"q')
