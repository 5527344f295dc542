"""A blocking client on fencer's own codec: for AlterReplicaState (kio does not know it), stress
scripts and benchmarks. The e2e tests use `KioClient` wherever kio has the API."""

from __future__ import annotations

from typing import Any

from protocol.registry import decode_response, encode_request
from protocol.spec import Data

from .framed_socket import FramedSocket


class FencerClient(FramedSocket):
    def __enter__(self) -> FencerClient:
        return self

    def send(self, body: Data, version: int) -> int:
        correlation_id = self.next_correlation_id()
        self.sock.sendall(encode_request(body, version, correlation_id, client_id="fencer-test"))
        return correlation_id

    def receive(self, api_key: int, version: int, correlation_id: int) -> Any:
        header, body = decode_response(self.read_frame(), api_key, version)
        assert header.correlation_id == correlation_id
        return body

    def request(self, body: Data, version: int) -> Any:
        return self.receive(body.API.key, version, self.send(body, version))
