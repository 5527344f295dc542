"""Varints: Kafka's encodings, length caps and zig-zag, checked against construct's own."""

from __future__ import annotations

import construct
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import DecodeError, EncodeError, TruncatedError
from protocol.primitives import (
    read_uvarint,
    read_uvarlong,
    read_varint,
    read_varlong,
    uvarint,
    uvarlong,
    varint,
    varlong,
)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (2**32 - 1, b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_unsigned_varint_known_values(value: int, encoded: bytes) -> None:
    assert uvarint(value) == encoded
    assert read_uvarint(encoded, 0) == (value, len(encoded))


@pytest.mark.parametrize(
    ("value", "encoded"), [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01")]
)
def test_zigzag_known_values(value: int, encoded: bytes) -> None:
    assert varint(value) == encoded
    assert read_varint(encoded, 0) == (value, len(encoded))


@given(st.integers(0, 2**32 - 1))
def test_uvarint_matches_construct_varint(value: int) -> None:
    assert uvarint(value) == construct.VarInt.build(value)
    assert read_uvarint(uvarint(value), 0)[0] == value


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_matches_construct_zigzag(value: int) -> None:
    assert varint(value) == construct.ZigZag.build(value)
    assert read_varint(varint(value), 0) == (value, len(varint(value)))


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    assert varlong(value) == construct.ZigZag.build(value)
    assert read_varlong(varlong(value), 0) == (value, len(varlong(value)))


@given(st.integers(0, 2**64 - 1))
def test_uvarlong_round_trip(value: int) -> None:
    assert read_uvarlong(uvarlong(value), 0) == (value, len(uvarlong(value)))


def test_varint_longer_than_five_bytes_is_rejected() -> None:
    with pytest.raises(DecodeError, match="longer than 5 bytes"):
        read_uvarint(b"\x80\x80\x80\x80\x80\x01", 0)


def test_varlong_longer_than_ten_bytes_is_rejected() -> None:
    with pytest.raises(DecodeError, match="longer than 10 bytes"):
        read_varlong(b"\x80" * 10 + b"\x01", 0)


def test_five_byte_varint_over_32_bits_is_rejected() -> None:
    with pytest.raises(DecodeError, match="32 bits"):
        read_uvarint(b"\xff\xff\xff\xff\x7f", 0)


def test_truncated_varint() -> None:
    with pytest.raises(TruncatedError):
        read_uvarint(b"\x80\x80", 0)


@pytest.mark.parametrize(
    ("writer", "value"),
    [(uvarint, -1), (uvarint, 2**32), (varint, 2**31), (varlong, -(2**63) - 1), (uvarlong, 2**64)],
)
def test_out_of_range_values_are_encode_errors(writer: object, value: int) -> None:
    with pytest.raises(EncodeError):
        writer(value)  # type: ignore[operator]
