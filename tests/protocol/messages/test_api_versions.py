"""ApiVersions: hand-derived golden bytes, the KIP-511 v0 fallback body, and unknown tags."""

from protocol.compiler import codec
from protocol.messages.api_versions import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
)


def test_request_v3_golden() -> None:
    message = ApiVersionsRequest(client_software_name="fencer", client_software_version="0.1")
    golden = bytes.fromhex(
        "07"
        "66656e636572"  # client_software_name: compact string, length 6 + 1, "fencer"
        "04"
        "302e31"  # client_software_version: compact string, length 3 + 1, "0.1"
        "00"  # tag buffer: no tagged fields
    )
    assert codec(ApiVersionsRequest, 3).encode(message) == golden
    assert codec(ApiVersionsRequest, 3).decode_exact(golden) == message


def test_response_v0_unsupported_version_fallback_golden() -> None:
    message = ApiVersionsResponse(
        error_code=35, api_keys=(ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=4),)
    )
    golden = bytes.fromhex(
        "0023"  # error_code: 35 (UNSUPPORTED_VERSION)
        "00000001"  # api_keys: INT32 count 1
        "0012"
        "0000"
        "0004"  # api_key 18, min_version 0, max_version 4
    )  # v0: no throttle time, no tag buffers
    assert codec(ApiVersionsResponse, 0).encode(message) == golden
    assert codec(ApiVersionsResponse, 0).decode_exact(golden) == message


def test_response_v3_golden_with_tagged_fields() -> None:
    message = ApiVersionsResponse(
        error_code=0,
        api_keys=(ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=4),),
        throttle_time_ms=0,
        finalized_features_epoch=5,
        zk_migration_ready=True,
    )
    golden = bytes.fromhex(
        "0000"  # error_code 0
        "02"  # api_keys: compact array, 1 + 1
        "0012"
        "0000"
        "0004"
        "00"  # api_key 18, min 0, max 4, element tag buffer
        "00000000"  # throttle_time_ms 0
        "02"  # tag buffer: 2 tagged fields (supported/finalized features are empty: left out)
        "01"
        "08"
        "0000000000000005"  # tag 1 finalized_features_epoch, 8 bytes: 5
        "03"
        "01"
        "01"  # tag 3 zk_migration_ready, 1 byte: true
    )
    assert codec(ApiVersionsResponse, 3).encode(message) == golden
    assert codec(ApiVersionsResponse, 3).decode_exact(golden) == message


def test_response_v3_unknown_tags_survive_decode_encode() -> None:
    golden = bytes.fromhex(
        "0000"  # error_code 0
        "02"  # api_keys: 1 element
        "0012"
        "0000"
        "0004"  # api_key 18, min 0, max 4
        "01"
        "07"
        "02"
        "abcd"  # element tag buffer: unknown tag 7, 2 bytes
        "00000000"  # throttle_time_ms 0
        "02"  # tag buffer: 2 fields
        "01"
        "08"
        "ffffffffffffffff"  # tag 1 finalized_features_epoch = -1 (the default, sent anyway)
        "09"
        "03"
        "010203"  # unknown tag 9, 3 bytes
    )
    decoded = codec(ApiVersionsResponse, 3).decode_exact(golden)
    assert decoded.unknown_tags == ((9, b"\x01\x02\x03"),)
    assert decoded.api_keys[0].unknown_tags == ((7, b"\xab\xcd"),)
    assert decoded.finalized_features_epoch == -1
    # A writer leaves out a tagged field at its default: only that field's bytes change.
    expected = golden.replace(bytes.fromhex("020108ffffffffffffffff"), b"\x01")
    assert codec(ApiVersionsResponse, 3).encode(decoded) == expected
    assert codec(ApiVersionsResponse, 3).decode_exact(expected) == decoded

    without_known = bytes.fromhex("000002001200000004010702abcd00000000010903010203")
    assert codec(ApiVersionsResponse, 3).encode(codec(ApiVersionsResponse, 3).decode_exact(without_known)) == (
        without_known
    )


def test_ignorable_fields_are_dropped_below_their_versions() -> None:
    message = ApiVersionsResponse(error_code=0, throttle_time_ms=100, zk_migration_ready=True)
    encoded = codec(ApiVersionsResponse, 0).encode(message)
    assert encoded == bytes.fromhex("000000000000")  # error_code, empty INT32 array
    assert codec(ApiVersionsResponse, 0).decode_exact(encoded) == ApiVersionsResponse()


def test_request_v0_is_empty() -> None:
    assert codec(ApiVersionsRequest, 0).encode(ApiVersionsRequest(client_software_name="dropped")) == b""
    assert codec(ApiVersionsRequest, 0).decode_exact(b"") == ApiVersionsRequest()
