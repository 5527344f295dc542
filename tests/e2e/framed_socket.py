"""A blocking TCP connection that sends and reads Kafka frames (INT32 size + payload); the
base of the test clients."""

from __future__ import annotations

import itertools
import socket
import struct


class FramedSocket:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self._ids = itertools.count(1)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> FramedSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def next_correlation_id(self) -> int:
        return next(self._ids)

    def read_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._read_exactly(4))
        return self._read_exactly(size)

    def _read_exactly(self, count: int) -> bytes:
        data = bytearray()
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            if not chunk:
                raise ConnectionError("connection closed by the daemon")
            data += chunk
        return bytes(data)
