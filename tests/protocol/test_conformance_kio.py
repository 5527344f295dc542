"""Byte-level conformance with kio 0.5.0, an independent implementation of the protocol.

For every API, version and direction fencer speaks and kio has: a Hypothesis-generated kio
message encodes (by kio) to bytes that fencer decodes to the equal message, and fencer encodes
that message back to exactly kio's bytes. The same holds for request and response headers.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.request_header.v0.header import RequestHeader as KioRequestHeaderV0
from kio.schema.request_header.v1.header import RequestHeader as KioRequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as KioRequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as KioResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as KioResponseHeaderV1

from protocol.compiler import codec
from protocol.headers import RequestHeader, ResponseHeader
from protocol.registry import all_apis
from protocol.spec import Data

from .kio_bridge import NEWER_THAN_KIO, from_kio, kio_encode, kio_payload_class, to_kio

# fencer's own API (KIP-589 never got an Apache Kafka key): kio cannot know it.
NOT_IN_KIO = {1000}


def _cases() -> list[tuple[type[Data], int, type]]:
    cases = []
    for info in all_apis():
        if info.key in NOT_IN_KIO:
            continue
        for version in info.versions:
            if (info.key, version) in NEWER_THAN_KIO:
                continue  # Kafka 4.0's, after kio 0.5.0: hand-written frames check it
            for kind, cls in (("request", info.request), ("response", info.response)):
                kio_cls = kio_payload_class(info.key, version, kind)
                assert kio_cls is not None, f"kio 0.5.0 lacks {cls.__name__} v{version}"
                cases.append((cls, version, kio_cls))
    return cases


#: Examples per API, shared among its versions (each version gets at least `FLOOR_EXAMPLES`, at most
#: the profile's count): neighbouring versions differ by a field or two, so an API of many versions
#: (Fetch: 18, UpdateMetadata: 9) still gets more examples in all than one of a single version,
#: and the suite's CPU (what a 2-core CI runs short of) is not spent once per version over. (100
#: and 15 cost this file 58 CPU s, 60 and 10 cost 41, 2026-11-26: the suite's 8-minute budget.)
API_EXAMPLES = 60
FLOOR_EXAMPLES = 10

CASES = _cases()


def examples_per_version(cls: type[Data]) -> int:
    versions = len(list(cls.API.valid))
    return max(FLOOR_EXAMPLES, min(settings.default.max_examples, API_EXAMPLES // versions))


HEADER_CASES = [
    (RequestHeader, 0, KioRequestHeaderV0),
    (RequestHeader, 1, KioRequestHeaderV1),
    (RequestHeader, 2, KioRequestHeaderV2),
    (ResponseHeader, 0, KioResponseHeaderV0),
    (ResponseHeader, 1, KioResponseHeaderV1),
]


def _check(our_cls: type[Data], version: int, kio_cls: type, data: st.DataObject) -> None:
    kio_message = data.draw(st.from_type(kio_cls), label="kio message")
    kio_bytes = kio_encode(kio_cls, kio_message)
    ours = codec(our_cls, version).decode_exact(kio_bytes)
    assert to_kio(ours, kio_cls) == kio_message
    assert from_kio(kio_message, our_cls) == ours
    assert codec(our_cls, version).encode(ours) == kio_bytes


@pytest.mark.parametrize(("our_cls", "version", "kio_cls"), CASES, ids=[f"{c.__name__}-v{v}" for c, v, _ in CASES])
def test_message_matches_kio(our_cls: type[Data], version: int, kio_cls: type) -> None:
    @settings(max_examples=examples_per_version(our_cls))
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        _check(our_cls, version, kio_cls, data)

    check()


@pytest.mark.parametrize(
    ("our_cls", "version", "kio_cls"), HEADER_CASES, ids=[f"{c.__name__}-v{v}" for c, v, _ in HEADER_CASES]
)
@given(data=st.data())
def test_header_matches_kio(our_cls: type[Data], version: int, kio_cls: type, data: st.DataObject) -> None:
    _check(our_cls, version, kio_cls, data)


def test_every_api_is_covered() -> None:
    """Every API fencer speaks is checked against kio, except its own AlterReplicaState."""
    covered = {cls.API.key for cls, _, _ in CASES}
    assert covered == {info.key for info in all_apis()} - NOT_IN_KIO
