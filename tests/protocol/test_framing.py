"""Sans-IO framing: whole frames out of arbitrary chunks; the size limit is enforced early."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import FrameTooLargeError
from protocol.framing import FrameBuffer, frame


@given(payloads=st.lists(st.binary(max_size=300), max_size=8), cuts=st.lists(st.integers(1, 50), max_size=40))
def test_frames_survive_any_chunking(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(frame(p) for p in payloads)
    buffer = FrameBuffer()
    got: list[bytes] = []
    position = 0
    for cut in [*cuts, len(stream)]:
        buffer.receive_data(stream[position : position + cut])
        position += cut
        got.extend(buffer.frames())
    assert got == payloads
    assert buffer.buffered == 0


def test_oversized_prefix_is_rejected_before_the_payload_is_buffered() -> None:
    buffer = FrameBuffer(max_frame_bytes=1024)
    with pytest.raises(FrameTooLargeError) as info:
        buffer.receive_data(struct.pack(">i", 2**31 - 1) + b"x" * 100)
    assert info.value.size == 2**31 - 1
    assert buffer.buffered == 0
    with pytest.raises(FrameTooLargeError):
        buffer.receive_data(b"more")
    with pytest.raises(FrameTooLargeError):
        buffer.next_frame()


def test_oversized_prefix_split_across_reads() -> None:
    buffer = FrameBuffer(max_frame_bytes=10)
    buffer.receive_data(b"\x00\x00")
    with pytest.raises(FrameTooLargeError):
        buffer.receive_data(b"\x00\x0b")


def test_negative_size_is_rejected() -> None:
    with pytest.raises(FrameTooLargeError):
        FrameBuffer().receive_data(struct.pack(">i", -1))


def test_frame_after_a_good_one_is_checked_when_reached() -> None:
    buffer = FrameBuffer(max_frame_bytes=10)
    buffer.receive_data(frame(b"ok") + struct.pack(">i", 11))
    assert buffer.next_frame() == b"ok"
    with pytest.raises(FrameTooLargeError):
        buffer.next_frame()


def test_exactly_the_limit_is_allowed() -> None:
    buffer = FrameBuffer(max_frame_bytes=5)
    buffer.receive_data(frame(b"12345"))
    assert buffer.next_frame() == b"12345"
    assert buffer.next_frame() is None


def test_default_limit_is_100_mib() -> None:
    assert FrameBuffer().max_frame_bytes == 100 * 1024 * 1024
