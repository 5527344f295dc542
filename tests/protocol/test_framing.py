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


@given(
    payloads=st.lists(st.binary(max_size=300), max_size=8),
    cuts=st.lists(st.integers(1, 400), max_size=40),
    bad_tail=st.booleans(),
)
def test_receive_frames_is_receive_data_then_frames(payloads: list[bytes], cuts: list[int], bad_tail: bool) -> None:
    """Whatever the chunking (whole frames included, the fast path), the same frames in order; a bad
    prefix after good frames comes back as the error, after them."""
    stream = b"".join(frame(p) for p in payloads) + (struct.pack(">i", 2000) if bad_tail else b"")
    buffer = FrameBuffer(max_frame_bytes=1000)
    got: list[bytes] = []
    error = None
    position = 0
    for cut in [*cuts, len(stream)]:
        chunk = stream[position : position + cut]
        position += cut
        if not chunk:
            continue
        frames, error = buffer.receive_frames(chunk)
        got.extend(frames)
        if error is not None:
            break
    assert got == payloads
    assert (error is not None) == bad_tail


def test_receive_frames_takes_a_whole_frame_as_it_is() -> None:
    buffer = FrameBuffer()
    assert buffer.receive_frames(frame(b"abc")) == ([b"abc"], None)
    assert buffer.receive_frames(frame(b"de")[:3]) == ([], None)  # partial: buffered, then completed
    assert buffer.receive_frames(frame(b"de")[3:] + frame(b"f")) == ([b"de", b"f"], None)
    assert buffer.buffered == 0


def test_announced_size_is_known_once_the_whole_prefix_has_arrived() -> None:
    buffer = FrameBuffer(max_frame_bytes=1000)
    assert buffer.announced_size == 0
    stream = frame(b"x" * 300)
    assert buffer.receive_frames(stream[:3]) == ([], None)
    assert buffer.announced_size == 0  # three bytes of the prefix: not yet
    assert buffer.receive_frames(stream[3:10]) == ([], None)
    assert buffer.announced_size == 300  # the frame being received will need 300 bytes
    frames, _ = buffer.receive_frames(stream[10:] + frame(b"next")[:5])
    assert frames == [b"x" * 300]
    assert buffer.announced_size == 4  # the head is now the next frame


def test_announced_size_is_zero_once_the_buffer_is_broken() -> None:
    buffer = FrameBuffer(max_frame_bytes=10)
    frames, error = buffer.receive_frames(struct.pack(">i", 11) + b"x")
    assert frames == [] and error is not None
    assert buffer.announced_size == 0
