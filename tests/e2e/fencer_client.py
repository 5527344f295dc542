"""A blocking client on fencer's own codec: for AlterReplicaState (kio does not know it), stress
scripts and benchmarks. The e2e tests use `KioClient` wherever kio has the API."""

from __future__ import annotations

import itertools
import socket
import struct
from typing import Any

from protocol.registry import decode_response, encode_request
from protocol.spec import Data


class FencerClient:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self._ids = itertools.count(1)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> FencerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, body: Data, version: int) -> int:
        correlation_id = next(self._ids)
        self.sock.sendall(encode_request(body, version, correlation_id, client_id="fencer-test"))
        return correlation_id

    def receive(self, api_key: int, version: int, correlation_id: int) -> Any:
        header, body = decode_response(self.read_frame(), api_key, version)
        assert header.correlation_id == correlation_id
        return body

    def request(self, body: Data, version: int) -> Any:
        return self.receive(body.API.key, version, self.send(body, version))

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
