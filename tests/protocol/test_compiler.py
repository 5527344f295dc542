"""The codec boundary: version rules on encode, and only the project's errors on bad input."""

from __future__ import annotations

import contextlib
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.compiler import codec, struct_for
from protocol.errors import DecodeError, EncodeError, TrailingBytesError, TruncatedError

from .sample_messages import SampleMessage
from .strategies import messages


def test_unknown_version_is_refused() -> None:
    with pytest.raises(ValueError, match="no version 4"):
        struct_for(SampleMessage, 4)


def test_non_ignorable_field_absent_from_version_must_keep_default() -> None:
    with pytest.raises(EncodeError, match="only_v1_plus is not in version 0"):
        codec(SampleMessage, 0).encode(SampleMessage(only_v1_plus=3))
    with pytest.raises(EncodeError, match="strict_v0 is not in version 1"):
        codec(SampleMessage, 1).encode(SampleMessage(strict_v0=3))


def test_ignorable_field_absent_from_version_is_dropped() -> None:
    message = SampleMessage(only_v0_v1="dropped")
    decoded = codec(SampleMessage, 2).decode_exact(codec(SampleMessage, 2).encode(message))
    assert decoded.only_v0_v1 == ""


@pytest.mark.parametrize(
    ("message", "version", "pattern"),
    [
        (SampleMessage(text=None), 0, "not nullable"),  # type: ignore[arg-type]
        (SampleMessage(maybe_longs=None), 0, "not nullable"),
        (SampleMessage(medium=2**31), 0, "cannot encode"),
        (SampleMessage(port=-1), 2, "cannot encode"),
        (SampleMessage(text="x" * 40000), 1, "too long"),
        (SampleMessage(numbers=("a",)), 2, "cannot encode"),  # type: ignore[arg-type]
        (SampleMessage(unknown_tags=((0, b"\x00\x00\x00\x01"),), tagged_int=5), 2, "appears twice"),
    ],
)
def test_bad_values_raise_encode_error(message: SampleMessage, version: int, pattern: str) -> None:
    with pytest.raises(EncodeError, match=pattern):
        codec(SampleMessage, version).encode(message)


def test_encode_wrong_class_is_refused() -> None:
    with pytest.raises(EncodeError, match="expected SampleMessage"):
        codec(SampleMessage, 0).encode("not a message")  # type: ignore[arg-type]


def test_trailing_bytes_are_an_error() -> None:
    encoded = codec(SampleMessage, 2).encode(SampleMessage())
    with pytest.raises(TrailingBytesError, match="1 bytes left"):
        codec(SampleMessage, 2).decode_exact(encoded + b"\x00")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@given(data=st.data())
def test_every_truncation_raises_decode_error(version: int, data: st.DataObject) -> None:
    message = data.draw(messages(SampleMessage, version, unknown_tags=True))
    encoded = codec(SampleMessage, version).encode(message)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(DecodeError):
        codec(SampleMessage, version).decode_exact(encoded[:cut])


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@given(data=st.data())
def test_mutated_bytes_raise_only_decode_error(version: int, data: st.DataObject) -> None:
    encoded = bytearray(codec(SampleMessage, version).encode(data.draw(messages(SampleMessage, version))))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(encoded) - 1))
        encoded[position] = data.draw(st.integers(0, 255))
    with contextlib.suppress(DecodeError):
        codec(SampleMessage, version).decode_exact(bytes(encoded))


@pytest.mark.parametrize(
    ("version", "prefix"),
    [
        (0, b"\x7f\xff\xff\xff"),  # legacy array of 2**31-1 elements
        (2, b"\xff\xff\xff\xff\x0f"),  # compact array of 2**32-2 elements
    ],
)
def test_huge_declared_lengths_fail_at_once_without_allocating(version: int, prefix: bytes) -> None:
    # a message whose `numbers` array declares billions of int32s but carries none
    empty = codec(SampleMessage, version).encode(SampleMessage(text="", blob=b""))
    # locate `numbers` length: right after text, maybe_text, blob, maybe_blob
    before = codec(SampleMessage, version).encode(SampleMessage(numbers=(1,)))
    offset = next(i for i, (a, b) in enumerate(zip(empty, before, strict=False)) if a != b)
    length_size = 4 if version < 2 else 1
    forged = empty[:offset] + prefix + empty[offset + length_size :]
    tracemalloc.start()
    try:
        with pytest.raises(TruncatedError, match="array declares"):
            codec(SampleMessage, version).decode_exact(forged)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


def test_huge_declared_string_fails_without_allocating() -> None:
    encoded = codec(SampleMessage, 1).encode(SampleMessage())
    fixed = 1 + 1 + 2 + 4 + 8 + 2 + 4 + 8 + 16
    forged = encoded[:fixed] + b"\x7f\xff" + encoded[fixed + 2 :]
    with pytest.raises(TruncatedError, match="string declares 32767 bytes"):
        codec(SampleMessage, 1).decode_exact(forged)


def test_overlong_varint_is_rejected() -> None:
    encoded = codec(SampleMessage, 2).encode(SampleMessage())
    fixed = 1 + 1 + 2 + 4 + 8 + 2 + 4 + 8 + 16
    forged = encoded[:fixed] + b"\x81\x80\x80\x80\x80\x00" + encoded[fixed + 1 :]
    with pytest.raises(DecodeError, match="longer than 5 bytes"):
        codec(SampleMessage, 2).decode_exact(forged)


def test_invalid_utf8_is_a_decode_error() -> None:
    encoded = codec(SampleMessage, 2).encode(SampleMessage(text="ab"))
    fixed = 1 + 1 + 2 + 4 + 8 + 2 + 4 + 8 + 16
    forged = encoded[: fixed + 1] + b"\xff\xfe" + encoded[fixed + 3 :]
    with pytest.raises(DecodeError, match="UnicodeDecodeError"):
        codec(SampleMessage, 2).decode_exact(forged)


def test_null_in_non_nullable_field_is_a_decode_error() -> None:
    encoded = codec(SampleMessage, 2).encode(SampleMessage())
    fixed = 1 + 1 + 2 + 4 + 8 + 2 + 4 + 8 + 16
    assert encoded[fixed] == 1  # compact empty string
    with pytest.raises(DecodeError, match="non-nullable"):
        codec(SampleMessage, 2).decode_exact(encoded[:fixed] + b"\x00" + encoded[fixed + 1 :])
