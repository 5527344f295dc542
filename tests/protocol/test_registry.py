"""Frame-level encode/decode: header versions, unknown APIs and versions, trailing bytes."""

from __future__ import annotations

import struct
import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.ops.served import DECODE_ONLY_API_KEYS, INBOUND_API_KEYS, OUTBOUND_API_KEYS
from protocol import registry
from protocol.api_keys import ApiKey
from protocol.errors import TrailingBytesError, TruncatedError, UnknownApiError, UnsupportedVersionError
from protocol.framing import frame
from protocol.headers import RequestHeader
from protocol.messages.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.messages.controlled_shutdown import ControlledShutdownRequest
from protocol.messages.update_metadata import UpdateMetadataRequest
from protocol.registry import all_apis, decode_request, decode_response, encode_request, encode_response, peek_request

from .strategies import messages


def test_api_table_matches_protocol_md() -> None:
    versions = {info.key: str(info.versions) for info in all_apis()}
    assert versions == {
        1: "0-17",
        4: "0-7",
        5: "0-4",
        6: "0-8",
        7: "0-3",
        18: "0-4",
        19: "2-7",
        20: "1-6",
        29: "0-3",
        30: "0-3",
        31: "0-3",
        43: "0-2",
        # v2 is Kafka 4.0's pre-vote (KIP-996); protocol.md's row says 0-1 with pre-vote in v1,
        # which Kafka's schema contradicts (v1 is KIP-853's directory ids)
        52: "0-2",
        53: "0-1",
        54: "0-1",
        55: "0-2",
        56: "0-3",
        59: "0-1",
        60: "0-1",
        62: "0-4",
        63: "0-1",
        1000: "0-1",
    }
    # every API is served by the controller, sent by it to brokers, or only decoded: exactly one
    assert set(versions) == INBOUND_API_KEYS | OUTBOUND_API_KEYS | DECODE_ONLY_API_KEYS
    assert not INBOUND_API_KEYS & OUTBOUND_API_KEYS
    assert not (INBOUND_API_KEYS | OUTBOUND_API_KEYS) & DECODE_ONLY_API_KEYS
    # the controller neither sends nor serves UpdateMetadata; KRaft's Raft RPCs are served (the quorum)
    assert {ApiKey.UPDATE_METADATA} == DECODE_ONLY_API_KEYS
    assert {
        ApiKey.FETCH,
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.DESCRIBE_QUORUM,
        ApiKey.FETCH_SNAPSHOT,
    } <= INBOUND_API_KEYS
    # the ACL APIs are served (SECURITY_DISABLED without an authorizer)
    assert {ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS} <= INBOUND_API_KEYS


@pytest.mark.parametrize("key", sorted(INBOUND_API_KEYS | OUTBOUND_API_KEYS | DECODE_ONLY_API_KEYS))
@given(data=st.data())
def test_requests_and_responses_round_trip_through_frames(key: int, data: st.DataObject) -> None:
    info = next(i for i in all_apis() if i.key == key)
    version = data.draw(st.sampled_from(list(info.versions)))
    request = data.draw(messages(info.request, version))
    encoded = encode_request(request, version, correlation_id=99, client_id="c1")
    assert struct.unpack(">i", encoded[:4])[0] == len(encoded) - 4
    decoded = decode_request(encoded[4:])
    assert (decoded.api_key, decoded.api_version, decoded.correlation_id) == (key, version, 99)
    assert decoded.body == request
    response = data.draw(messages(info.response, version))
    header, body = decode_response(encode_response(response, version, correlation_id=99)[4:], key, version)
    assert header.correlation_id == 99
    assert body == response


def test_controlled_shutdown_v0_uses_request_header_v0() -> None:
    encoded = encode_request(ControlledShutdownRequest(broker_id=3), 0, correlation_id=5)
    # size, api key 7, version 0, correlation id 5, then the body: broker id 3. No client id.
    assert encoded == struct.pack(">ihhii", 12, 7, 0, 5, 3)
    assert decode_request(encoded[4:]).header == RequestHeader(
        request_api_key=7, request_api_version=0, correlation_id=5, client_id=None
    )


def test_flexible_request_uses_header_v2_with_legacy_client_id() -> None:
    encoded = encode_request(AlterPartitionRequest(broker_id=1, topics=()), 0, correlation_id=1, client_id="ab")
    # header v2: key, version, correlation, INT16-length client id "ab", empty tag buffer
    assert encoded[4:17] == struct.pack(">hhih", 56, 0, 1, 2) + b"ab" + b"\x00"


def test_api_versions_response_header_is_v0_even_when_flexible() -> None:
    encoded = encode_response(ApiVersionsResponse(error_code=0), 3, correlation_id=8)
    # header v0 is just the correlation id: the body (error code 0) follows at once
    assert encoded[4:10] == struct.pack(">ih", 8, 0)


def test_flexible_response_header_has_a_tag_buffer() -> None:
    encoded = encode_response(AlterPartitionResponse(), 2, correlation_id=8)
    assert encoded[4:9] == struct.pack(">i", 8) + b"\x00"


def test_unknown_api_key_carries_the_correlation_id() -> None:
    payload = struct.pack(">hhih", 999, 0, 42, -1)
    with pytest.raises(UnknownApiError) as info:
        decode_request(payload)
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (999, 0, 42)


def test_api_not_served_on_this_listener_is_unknown() -> None:
    frame_bytes = encode_request(ApiVersionsRequest(), 0, correlation_id=3)
    decode_request(frame_bytes[4:], allowed=INBOUND_API_KEYS)
    leader_and_isr = struct.pack(">hhih", 4, 0, 3, -1)
    with pytest.raises(UnknownApiError):
        decode_request(leader_and_isr, allowed=INBOUND_API_KEYS)


@pytest.mark.parametrize("version", range(9))
def test_update_metadata_is_decoded_but_not_served(version: int) -> None:
    """A well-formed UpdateMetadata decodes, but the daemon's listener (allowed=INBOUND_API_KEYS)
    refuses it exactly as it refused api key 6 before the codec knew it: an unknown api."""
    body = UpdateMetadataRequest(controller_id=1, controller_epoch=2, live_brokers=())
    payload = encode_request(body, version, correlation_id=42)[4:]
    assert decode_request(payload).body == body
    with pytest.raises(UnknownApiError) as info:
        decode_request(payload, allowed=INBOUND_API_KEYS)
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (6, version, 42)
    assert (info.value.reason, str(info.value)) == ("unknown_api", f"unknown api key 6 (version {version})")


@pytest.mark.parametrize(("key", "version"), [(18, 99), (56, 4), (19, 1), (20, 0), (1000, 2)])
def test_unsupported_versions(key: int, version: int) -> None:
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(struct.pack(">hhih", key, version, 77, -1))
    assert info.value.correlation_id == 77


def test_trailing_bytes_after_the_body_are_an_error() -> None:
    payload = encode_request(ApiVersionsRequest(), 0, correlation_id=3)[4:]
    with pytest.raises(TrailingBytesError):
        decode_request(payload + b"\x00")


@pytest.mark.parametrize("payload", [b"", b"\x00", b"\x00\x12\x00"])
def test_too_short_for_a_header(payload: bytes) -> None:
    with pytest.raises(TruncatedError):
        decode_request(payload)


def test_peek_request_reads_key_version_and_correlation() -> None:
    assert peek_request(struct.pack(">hhi", 18, 3, 12)) == (18, 3, 12)
    assert peek_request(struct.pack(">hh", 18, 3)) == (18, 3, None)


def test_frame_helper() -> None:
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"


def test_api_versions_response_falls_back_to_v0_body() -> None:
    """KIP-511: an old server answers an unknown ApiVersions version with a v0 body (error 35)."""
    v0_body = encode_response(ApiVersionsResponse(error_code=35), 0, correlation_id=4)
    header, body = decode_response(v0_body[4:], 18, 4)
    assert header.correlation_id == 4
    assert isinstance(body, ApiVersionsResponse)
    assert body.error_code == 35


def test_compile_codecs_compiles_every_version_of_the_apis_given() -> None:
    from protocol.compiler import _CODECS
    from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse

    registry.compile_codecs(frozenset({ApiKey.BROKER_HEARTBEAT}))
    info = registry.api(ApiKey.BROKER_HEARTBEAT)
    assert info.request is BrokerHeartbeatRequest and info.response is BrokerHeartbeatResponse
    for version in info.versions:
        assert (BrokerHeartbeatRequest, version) in _CODECS and (BrokerHeartbeatResponse, version) in _CODECS
        assert (ApiKey.BROKER_HEARTBEAT, version) in registry._REQUEST_CODECS


def test_the_api_table_is_read_from_the_message_classes_and_refuses_a_module_that_is_no_api() -> None:
    from protocol.messages import vote

    assert registry.api(ApiKey.VOTE).request is vote.VoteRequest and registry.api(ApiKey.VOTE).name == "Vote"
    half = types.ModuleType("half")
    half.VoteRequest = vote.VoteRequest  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="one request and one response"):  # a request without its response
        registry._table((half,))
    with pytest.raises(TypeError, match="no API of their own"):  # one key in two modules
        registry._table((vote, vote))
