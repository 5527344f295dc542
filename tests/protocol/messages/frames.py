"""Shared checks for the tests that write whole frames byte by byte (test-only).

`check_request` decodes a hand-written request frame with fencer (header and body) and its body
with kio, compares both with the expected message, and encodes the message back to the same
bytes; `check_response` does the same for a response frame. The frames in the tests are written
from Kafka 3.9's JSON schemas, never by fencer's encoder, so a mistake made in both fencer's
encoder and decoder cannot pass.
"""

from __future__ import annotations

from hypothesis import strategies as st

from protocol.compiler import codec, struct_for
from protocol.headers import RequestHeader
from protocol.registry import decode_request, decode_response, encode_request, encode_response
from protocol.spec import Data

from ..kio_bridge import NEWER_THAN_KIO, kio_decode, kio_payload_class, to_kio
from ..strategies import messages

CORRELATION = 42


def header_v1(key: int, version: int) -> bytes:
    """Request header v1 (non-flexible versions): api key, version, correlation id 42, client id "c"."""
    return bytes.fromhex(f"{key:04x} {version:04x} 0000002a 0001 63")


def header_v2(key: int, version: int) -> bytes:
    """Request header v2 (flexible versions): header v1 (the client id keeps its INT16 length), then an
    empty tag buffer."""
    return header_v1(key, version) + b"\x00"


def response_header(flexible: bool) -> bytes:
    """Response header v0 (the correlation id 42) or, for flexible versions, v1 (then an empty tag buffer)."""
    return bytes.fromhex("0000002a") + (b"\x00" if flexible else b"")


def check_request(message: Data, version: int, body: bytes) -> None:
    """The frame decodes to `message` (fencer, and kio for the body) and `message` encodes to it."""
    key = message.API.key
    flexible = version in message.API.flexible
    payload = (header_v2 if flexible else header_v1)(key, version) + body
    decoded = decode_request(payload)
    assert decoded.header == RequestHeader(
        request_api_key=key, request_api_version=version, correlation_id=CORRELATION, client_id="c"
    )
    assert decoded.body == message
    _check_kio(message, version, body, "request")
    assert encode_request(message, version, CORRELATION, client_id="c")[4:] == payload


def check_response(message: Data, version: int, body: bytes) -> None:
    """The same for a response frame (the body after the response header)."""
    key = message.API.key
    payload = response_header(version in message.API.flexible) + body
    header, decoded = decode_response(payload, key, version)
    assert header.correlation_id == CORRELATION
    assert decoded == message
    _check_kio(message, version, body, "response")
    assert encode_response(message, version, CORRELATION)[4:] == payload


def _check_kio(message: Data, version: int, body: bytes, kind: str) -> None:
    """kio decodes `body` to `message` (unless the version is newer than kio: `NEWER_THAN_KIO`)."""
    key = message.API.key
    kio_cls = kio_payload_class(key, version, kind)
    if (key, version) in NEWER_THAN_KIO:
        assert kio_cls is None, f"kio now has {type(message).__name__} v{version}: check it again"
        return
    assert kio_cls is not None
    assert kio_decode(kio_cls, body) == to_kio(message, kio_cls)


def check_round_trip_with_unknown_tags(classes: tuple[type[Data], ...], version: int, data: st.DataObject) -> None:
    """A drawn message (unknown tags included where flexible) encodes and decodes to itself,
    compiled and interpreted alike (the registry and kio tests draw no unknown tags)."""
    for cls in classes:
        message = data.draw(messages(cls, version, unknown_tags=True))
        compiled = codec(cls, version)
        encoded = compiled.encode(message)
        assert struct_for(cls, version).build(message) == encoded
        assert struct_for(cls, version).parse(encoded) == message
        assert compiled.decode_exact(encoded) == message
