"""Kafka's variable-length integers, read from a buffer at an offset and written to bytes.

Rules (Kafka's `ByteUtils`):
- UNSIGNED_VARINT: 7 bits a byte, least significant group first, high bit = more. At most
  5 bytes for a 32-bit value and 10 for a 64-bit one; a longer encoding is an error.
- VARINT / VARLONG: zig-zag (`(n << 1) ^ (n >> 31)`, or `>> 63`) then unsigned varint.
Readers return `(value, next_offset)` and raise only `DecodeError` subclasses.
"""

from __future__ import annotations

from .errors import DecodeError, EncodeError, TruncatedError

MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10
_U32 = (1 << 32) - 1
_U64 = (1 << 64) - 1


def _read_unsigned(buf: bytes | bytearray | memoryview, pos: int, max_bytes: int) -> tuple[int, int]:
    value = 0
    shift = 0
    end = len(buf)
    for _ in range(max_bytes):
        if pos >= end:
            raise TruncatedError(f"varint runs past the end of the data at offset {pos}")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise DecodeError(f"varint longer than {max_bytes} bytes before offset {pos}")


def read_uvarint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """An UNSIGNED_VARINT (32-bit, at most 5 bytes)."""
    value, pos = _read_unsigned(buf, pos, MAX_VARINT_BYTES)
    if value > _U32:
        raise DecodeError(f"unsigned varint {value} does not fit in 32 bits")
    return value, pos


def read_uvarlong(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """An unsigned 64-bit varint (at most 10 bytes)."""
    value, pos = _read_unsigned(buf, pos, MAX_VARLONG_BYTES)
    if value > _U64:
        raise DecodeError(f"unsigned varlong {value} does not fit in 64 bits")
    return value, pos


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """A zig-zag VARINT (signed 32-bit)."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """A zig-zag VARLONG (signed 64-bit)."""
    raw, pos = read_uvarlong(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def _write_unsigned(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def uvarint(value: int) -> bytes:
    """Encode an UNSIGNED_VARINT (0 .. 2**32-1)."""
    if not 0 <= value <= _U32:
        raise EncodeError(f"unsigned varint {value} is outside 0..2**32-1")
    return _write_unsigned(value)


def uvarlong(value: int) -> bytes:
    """Encode an unsigned 64-bit varint."""
    if not 0 <= value <= _U64:
        raise EncodeError(f"unsigned varlong {value} is outside 0..2**64-1")
    return _write_unsigned(value)


def varint(value: int) -> bytes:
    """Encode a zig-zag VARINT (-2**31 .. 2**31-1)."""
    if not -(1 << 31) <= value < (1 << 31):
        raise EncodeError(f"varint {value} does not fit in 32 bits")
    return _write_unsigned(((value << 1) ^ (value >> 31)) & _U32)


def varlong(value: int) -> bytes:
    """Encode a zig-zag VARLONG (-2**63 .. 2**63-1)."""
    if not -(1 << 63) <= value < (1 << 63):
        raise EncodeError(f"varlong {value} does not fit in 64 bits")
    return _write_unsigned(((value << 1) ^ (value >> 63)) & _U64)
