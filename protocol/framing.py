"""Sans-IO framing: bytes in, whole frames out (h11's discipline; no sockets here).

A frame is an INT32 size followed by that many bytes (request or response header + body).
The size is checked against the limit as soon as its 4 bytes arrive, before any of the payload
is kept, so a peer cannot make us buffer an oversized frame. After an error the buffer stays
broken: the connection must be closed.
`announced_size` tells the caller how much memory the frame being received will need as soon as
its prefix is known, so that it can reserve it before reading on (Kafka's memory pool).
"""

from __future__ import annotations

import struct

from .errors import FrameTooLargeError

DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024
_SIZE = struct.Struct(">i")


def frame(payload: bytes | bytearray) -> bytes:
    """Prefix a payload with its INT32 size."""
    return _SIZE.pack(len(payload)) + payload


class FrameBuffer:
    """Accumulates received bytes and yields complete frame payloads in order."""

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        if max_frame_bytes < 0:
            raise ValueError("max_frame_bytes must be >= 0")
        self.max_frame_bytes = max_frame_bytes
        #: the payload size the prefix of the frame at the head of the buffer announces: 0 until
        #: that prefix has arrived whole (and valid); kept current by every method (an attribute,
        #: not a property: the reader consults it after every read)
        self.announced_size = 0
        self._data = bytearray()
        self._start = 0
        self._error: FrameTooLargeError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as frames."""
        return len(self._data) - self._start

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Take bytes from the peer. Raises `FrameTooLargeError` once a bad size prefix is seen."""
        if self._error is not None:
            raise self._error
        self._data += data
        self._check_prefix()

    def _announce(self) -> bool:
        """Note the head frame's size in `announced_size`; False if its prefix is out of bounds."""
        if len(self._data) - self._start < 4:
            self.announced_size = 0
            return True
        size: int = _SIZE.unpack_from(self._data, self._start)[0]
        valid = 0 <= size <= self.max_frame_bytes
        self.announced_size = size if valid else 0
        return valid

    def _check_prefix(self) -> None:
        if not self._announce():
            (size,) = _SIZE.unpack_from(self._data, self._start)
            self._error = FrameTooLargeError(size, self.max_frame_bytes)
            self._data = bytearray()
            self._start = 0
            raise self._error

    def next_frame(self) -> bytes | None:
        """The next complete frame's payload, or None until one has fully arrived."""
        if self._error is not None:
            raise self._error
        self._check_prefix()
        size = self.announced_size
        if len(self._data) - self._start < 4 + size:  # (with fewer than 4 bytes, size is 0)
            return None
        begin = self._start + 4
        payload = bytes(self._data[begin : begin + size])
        self._start = begin + size
        if self._start == len(self._data):
            self._data.clear()
            self._start = 0
        elif self._start > 65536 and self._start * 2 > len(self._data):
            del self._data[: self._start]
            self._start = 0
        self._announce()  # the next frame's prefix: refused when that frame is reached
        return payload

    def receive_frames(self, data: bytes) -> tuple[list[bytes], FrameTooLargeError | None]:
        """`receive_data(data)`, then every complete frame, and the error of a bad size prefix
        met after them (None if none; once there is one the buffer stays broken).

        The common case of a request-response peer, nothing buffered and `data` exactly one
        frame, costs one slice instead of buffering and copying the payload out again."""
        if self._error is None and self._start == len(self._data) and len(data) >= 4:
            (size,) = _SIZE.unpack_from(data, 0)
            if 0 <= size <= self.max_frame_bytes and len(data) == 4 + size:
                return [data[4:]], None
        out: list[bytes] = []
        try:
            self.receive_data(data)
            while (payload := self.next_frame()) is not None:
                out.append(payload)
        except FrameTooLargeError as exc:
            return out, exc
        return out, None

    def frames(self) -> list[bytes]:
        """Every complete frame currently buffered."""
        out = []
        while (payload := self.next_frame()) is not None:
            out.append(payload)
        return out
