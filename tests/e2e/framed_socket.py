"""A blocking TCP connection that sends and reads Kafka frames (INT32 size + payload); the
base of the test clients. With `tls` (a client SSLContext), the connection is TLS to `host`."""

from __future__ import annotations

import itertools
import socket
import ssl
import struct


class FramedSocket:
    def __init__(
        self, port: int, host: str = "127.0.0.1", timeout: float = 10.0, tls: ssl.SSLContext | None = None
    ) -> None:
        sock = socket.create_connection((host, port), timeout=timeout)
        self.sock = sock if tls is None else tls.wrap_socket(sock, server_hostname=host)
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
