"""git's variable-length integers, read and written in one place.

git uses three encodings, seven bits a byte, the high bit saying "more follows":

- the *offset* varint of git's ``varint.c`` (most significant group first,
  each continuation adding one, so no number has two spellings): an
  ``OFS_DELTA``'s distance to its base in a pack, and the length of the
  path prefix an index v4 entry strips from the previous path;
- the *object header* of a pack entry: the type in bits 4-6 of the first
  byte, the size in its low four bits and then seven bits a byte, least
  significant first;
- the *size* varint a delta's data starts with (base size, then result
  size): seven bits a byte, least significant first.

Readers take the bytes and a position and return the value and the position
after it; they raise IndexError when the bytes end before the number does.
"""

from __future__ import annotations


def read_offset(data: bytes, pos: int) -> tuple[int, int]:
    """An offset varint at ``pos``, and where it ends."""
    byte = data[pos]
    pos += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos


def encode_offset(value: int) -> bytes:
    """``value`` as an offset varint."""
    out = [value & 0x7F]
    value >>= 7
    while value:
        value -= 1
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    return bytes(reversed(out))


def read_object_header(data: bytes, pos: int = 0) -> tuple[int, int, int]:
    """(type, size, where the entry's data starts) of the pack entry header at ``pos``."""
    byte = data[pos]
    kind, size, shift = (byte >> 4) & 7, byte & 0x0F, 4
    pos += 1
    while byte & 0x80:
        byte = data[pos]
        pos += 1
        size |= (byte & 0x7F) << shift
        shift += 7
    return kind, size, pos


def encode_object_header(kind: int, size: int) -> bytes:
    """A pack entry header for an object of this type and size."""
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def read_size(data: bytes, pos: int) -> tuple[int, int]:
    """A delta's size varint at ``pos``, and where it ends."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos
