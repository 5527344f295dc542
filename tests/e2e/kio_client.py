"""A blocking Kafka client built on kio 0.5.0 (an implementation independent of fencer's codec).

Requests are kio entities; their header class comes from kio (`__header_schema__`), so header
versions follow kio's reading of Kafka's rules, not fencer's. Responses are read with kio too.
"""

from __future__ import annotations

import io
import struct
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer

from .framed_socket import FramedSocket


class KioClient(FramedSocket):
    def __enter__(self) -> KioClient:
        return self

    def send(self, request: Any) -> int:
        correlation_id, data = self.encode(request)
        self.sock.sendall(data)
        return correlation_id

    def encode(self, request: Any) -> tuple[int, bytes]:
        """The next correlation id, and the frame of `request` with it (to send later)."""
        correlation_id = self.next_correlation_id()
        header_cls = request.__header_schema__
        fields = {"request_api_key": request.__api_key__, "request_api_version": request.__version__}
        fields["correlation_id"] = correlation_id
        if "client_id" in header_cls.__dataclass_fields__:
            fields["client_id"] = "kio-test"
        buffer = io.BytesIO()
        entity_writer(header_cls)(buffer, header_cls(**fields))
        entity_writer(type(request))(buffer, request)
        payload = buffer.getvalue()
        return correlation_id, struct.pack(">i", len(payload)) + payload

    def receive(self, request: Any, correlation_id: int) -> Any:
        payload = self.read_frame()
        response_cls = load_response_schema(request.__api_key__, request.__version__)
        header, size = entity_reader(response_cls.__header_schema__)(payload, 0)
        assert header.correlation_id == correlation_id, (header, correlation_id)
        body, body_size = entity_reader(response_cls)(payload, size)
        assert size + body_size == len(payload), "trailing bytes in the response"
        return body

    def request(self, request: Any) -> Any:
        return self.receive(request, self.send(request))

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True if the daemon closes the connection (without sending anything) within `timeout`."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
