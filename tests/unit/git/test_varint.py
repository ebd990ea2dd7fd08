"""snapshotter/git/varint.py: git's three variable-length integers, as git spells them."""

from __future__ import annotations

import pytest

from snapshotter.git import varint

NUMBERS = [0, 1, 0x7F, 0x80, 0x3FFF, 0x4000, 0x407F, 2**31 - 1, 2**32, 2**40 + 12345]


@pytest.mark.parametrize(
    ("value", "spelled"),
    [
        (0, b"\x00"),
        (0x7F, b"\x7f"),
        (0x80, b"\x80\x00"),
        (0x407F, b"\xff\x7f"),  # the largest two-byte offset
        (0x4080, b"\x80\x80\x00"),
    ],
)
def test_offsets_are_spelled_as_gits_varint_c(value: int, spelled: bytes) -> None:
    """Each continuation adds one, so 0x80 is two bytes and no number has two spellings."""
    assert varint.encode_offset(value) == spelled
    assert varint.read_offset(b"pre" + spelled + b"post", 3) == (value, 3 + len(spelled))


@pytest.mark.parametrize("value", NUMBERS)
def test_an_offset_reads_back_as_written(value: int) -> None:
    spelled = varint.encode_offset(value)
    assert varint.read_offset(spelled, 0) == (value, len(spelled))


@pytest.mark.parametrize(
    ("kind", "size", "spelled"),
    [(3, 10, b"\x3a"), (1, 15, b"\x1f"), (3, 100, b"\xb4\x06"), (2, 16, b"\xa0\x01")],
)
def test_a_pack_entry_header_holds_the_type_and_the_size(
    kind: int, size: int, spelled: bytes
) -> None:
    assert varint.encode_object_header(kind, size) == spelled
    assert varint.read_object_header(spelled + b"data") == (kind, size, len(spelled))


@pytest.mark.parametrize("size", NUMBERS)
def test_every_size_reads_back_with_each_type(size: int) -> None:
    for kind in (1, 2, 3, 4, 6, 7):
        header = varint.encode_object_header(kind, size)
        assert varint.read_object_header(b"xx" + header, 2) == (kind, size, 2 + len(header))


def test_a_delta_size_is_least_significant_group_first() -> None:
    assert varint.read_size(b"\x05", 0) == (5, 1)
    assert varint.read_size(b"..\xe4\x00", 2) == (0x64, 4)  # a redundant zero group is read
    assert varint.read_size(b"\x80\x01\xff", 0) == (128, 2)
    assert varint.read_size(b"\xff\xff\x03", 0) == (0xFFFF, 3)


@pytest.mark.parametrize(
    "read",
    [
        lambda: varint.read_offset(b"\x80", 0),
        lambda: varint.read_object_header(b"\xb4"),
        lambda: varint.read_size(b"\xff\xff", 0),
    ],
)
def test_bytes_that_end_inside_a_number_raise_index_error(read: object) -> None:
    with pytest.raises(IndexError):
        read()  # type: ignore[operator]
