"""UpdateMetadata (api key 6): whole frames written byte by byte from Kafka 3.9's
UpdateMetadataRequest.json / UpdateMetadataResponse.json, never by fencer's encoder.

One frame per request layout: v0 (ungrouped partition states, a single host and port per
broker), v1 (endpoints), v3 (listener names, a null rack), v4 (offline replicas), v5 (broker
epoch, states grouped by topic), v7 (topic id, flexible), v8 (isKRaftController and the tagged
Type), and the response before and after the flexible boundary. Each frame is decoded by
fencer and by kio (so a mistake made in both the frame and fencer's description cannot pass),
and fencer encodes the decoded message back to the same bytes. Then the version rules (which
fields are ignorable) and a property test with unknown tags, compiled against interpreted.
"""

import dataclasses
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.compiler import codec, struct_for
from protocol.errors import EncodeError
from protocol.headers import RequestHeader
from protocol.messages.update_metadata import (
    UpdateMetadataRequest,
    UpdateMetadataRequestBroker,
    UpdateMetadataRequestEndpoint,
    UpdateMetadataRequestPartitionState,
    UpdateMetadataRequestTopicState,
    UpdateMetadataResponse,
)
from protocol.registry import decode_request, decode_response, encode_request, encode_response
from protocol.spec import Data

from ..kio_bridge import kio_decode, kio_payload_class, to_kio
from ..strategies import messages

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
CORRELATION = 42

# Request header v1 (versions 0-5): api key 6, version, correlation id 42, client id "c" (INT16 length).
# Request header v2 (versions 6-8, flexible): the same, then an empty tag buffer; the client id keeps its INT16 length.


def header_v1(version: int) -> bytes:
    return bytes.fromhex(f"0006 {version:04x} 0000002a 0001 63")


def header_v2(version: int) -> bytes:
    return header_v1(version) + b"\x00"


def partition(**changes: object) -> UpdateMetadataRequestPartitionState:
    fields: dict[str, object] = {
        "partition_index": 0,
        "controller_epoch": 2,
        "leader": 1,
        "leader_epoch": 5,
        "isr": (1, 2),
        "zk_version": 7,
        "replicas": (1, 2),
    }
    fields.update(changes)
    return UpdateMetadataRequestPartitionState(**fields)  # type: ignore[arg-type]


def check_request(message: UpdateMetadataRequest, version: int, header: bytes, body: bytes) -> None:
    """The frame decodes to `message` (fencer, and kio for the body) and `message` encodes to it."""
    payload = header + body
    decoded = decode_request(payload)
    assert decoded.header == RequestHeader(
        request_api_key=6, request_api_version=version, correlation_id=CORRELATION, client_id="c"
    )
    assert decoded.body == message
    kio_cls = kio_payload_class(6, version, "request")
    assert kio_decode(kio_cls, body) == to_kio(message, kio_cls)  # type: ignore[arg-type]
    assert encode_request(message, version, CORRELATION, client_id="c")[4:] == payload


def check_response(message: Data, version: int, payload: bytes) -> None:
    header, decoded = decode_response(payload, 6, version)
    assert header.correlation_id == CORRELATION
    assert decoded == message
    assert encode_response(message, version, CORRELATION)[4:] == payload


def test_request_v0_ungrouped_states_and_a_single_host_and_port() -> None:
    message = UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=2,
        ungrouped_partition_states=(partition(topic_name="t"),),
        live_brokers=(UpdateMetadataRequestBroker(id_=1, v0_host="h", v0_port=9092),),
    )
    body = bytes.fromhex(
        "00000001"  # ControllerId 1
        "00000002"  # ControllerEpoch 2 (no BrokerEpoch before v5)
        "00000001"  # UngroupedPartitionStates (v0-4): int32 count 1
        "0001 74"  # - TopicName string "t" (v0-4)
        "00000000"  # - PartitionIndex 0
        "00000002"  # - ControllerEpoch 2
        "00000001"  # - Leader 1
        "00000005"  # - LeaderEpoch 5
        "00000002 00000001 00000002"  # - Isr: int32 count 2, [1, 2]
        "00000007"  # - ZkVersion 7
        "00000002 00000001 00000002"  # - Replicas: int32 count 2, [1, 2] (no OfflineReplicas before v4)
        "00000001"  # LiveBrokers: int32 count 1
        "00000001"  # - Id 1
        "0001 68"  # - V0Host string "h" (v0 only)
        "00002384"  # - V0Port 9092 (v0 only; no Endpoints, no Rack)
    )
    check_request(message, 0, header_v1(0), body)


def test_request_v1_endpoints_replace_host_and_port() -> None:
    message = UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=2,
        ungrouped_partition_states=(),
        live_brokers=(
            UpdateMetadataRequestBroker(
                id_=1, endpoints=(UpdateMetadataRequestEndpoint(port=9092, host="h", security_protocol=1),)
            ),
        ),
    )
    body = bytes.fromhex(
        "00000001 00000002"  # ControllerId 1, ControllerEpoch 2
        "00000000"  # UngroupedPartitionStates: empty
        "00000001"  # LiveBrokers: count 1
        "00000001"  # - Id 1 (no V0Host / V0Port from v1)
        "00000001"  # - Endpoints (v1+): count 1
        "00002384"  # -- Port 9092 (port before host, as the schema orders them)
        "0001 68"  # -- Host "h" (no Listener before v3)
        "0001"  # -- SecurityProtocol 1 (SSL); no Rack before v2
    )
    check_request(message, 1, header_v1(1), body)


def test_request_v3_listener_names_and_a_null_rack() -> None:
    message = UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=2,
        ungrouped_partition_states=(partition(topic_name="t", isr=(1,), replicas=(1,)),),
        live_brokers=(
            UpdateMetadataRequestBroker(
                id_=1,
                endpoints=(UpdateMetadataRequestEndpoint(port=9092, host="h", listener="L", security_protocol=0),),
                rack="r",
            ),
            UpdateMetadataRequestBroker(id_=2, rack=None),
        ),
    )
    body = bytes.fromhex(
        "00000001 00000002"  # ControllerId 1, ControllerEpoch 2
        "00000001"  # UngroupedPartitionStates: count 1
        "0001 74 00000000"  # - TopicName "t", PartitionIndex 0
        "00000002 00000001 00000005"  # - ControllerEpoch 2, Leader 1, LeaderEpoch 5
        "00000001 00000001"  # - Isr [1]
        "00000007"  # - ZkVersion 7
        "00000001 00000001"  # - Replicas [1]
        "00000002"  # LiveBrokers: count 2
        "00000001"  # - Id 1
        "00000001"  # - Endpoints: count 1
        "00002384 0001 68"  # -- Port 9092, Host "h"
        "0001 4c"  # -- Listener "L" (v3+)
        "0000"  # -- SecurityProtocol 0 (PLAINTEXT)
        "0001 72"  # - Rack "r" (v2+, nullable string)
        "00000002"  # - Id 2
        "00000000"  # - Endpoints: empty
        "ffff"  # - Rack null (INT16 length -1)
    )
    check_request(message, 3, header_v1(3), body)


def test_request_v4_offline_replicas() -> None:
    message = UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=2,
        ungrouped_partition_states=(partition(topic_name="t", leader=-1, isr=(), offline_replicas=(1, 2)),),
        live_brokers=(),
    )
    body = bytes.fromhex(
        "00000001 00000002"  # ControllerId 1, ControllerEpoch 2
        "00000001"  # UngroupedPartitionStates: count 1
        "0001 74 00000000 00000002"  # - TopicName "t", PartitionIndex 0, ControllerEpoch 2
        "ffffffff 00000005"  # - Leader -1 (none), LeaderEpoch 5
        "00000000"  # - Isr: empty
        "00000007"  # - ZkVersion 7
        "00000002 00000001 00000002"  # - Replicas [1, 2]
        "00000002 00000001 00000002"  # - OfflineReplicas (v4+) [1, 2]
        "00000000"  # LiveBrokers: empty
    )
    check_request(message, 4, header_v1(4), body)


def test_request_v5_broker_epoch_and_states_grouped_by_topic() -> None:
    message = UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=2,
        broker_epoch=10,
        topic_states=(
            UpdateMetadataRequestTopicState(
                topic_name="t", partition_states=(partition(replicas=(1, 2, 3), offline_replicas=(3,)),)
            ),
        ),
        live_brokers=(
            UpdateMetadataRequestBroker(
                id_=1,
                endpoints=(
                    UpdateMetadataRequestEndpoint(port=9092, host="h", listener="PLAINTEXT", security_protocol=0),
                ),
                rack=None,
            ),
        ),
    )
    body = bytes.fromhex(
        "00000001"  # ControllerId 1
        "00000002"  # ControllerEpoch 2
        "000000000000000a"  # BrokerEpoch 10 (v5+, KIP-380)
        "00000001"  # TopicStates (v5+): int32 count 1
        "0001 74"  # - TopicName "t" (no TopicId before v7)
        "00000001"  # - PartitionStates: count 1
        "00000000"  # -- PartitionIndex 0 (no TopicName from v5: the topic carries it)
        "00000002 00000001 00000005"  # -- ControllerEpoch 2, Leader 1, LeaderEpoch 5
        "00000002 00000001 00000002"  # -- Isr [1, 2]
        "00000007"  # -- ZkVersion 7
        "00000003 00000001 00000002 00000003"  # -- Replicas [1, 2, 3]
        "00000001 00000003"  # -- OfflineReplicas [3]
        "00000001"  # LiveBrokers: count 1
        "00000001"  # - Id 1
        "00000001"  # - Endpoints: count 1
        "00002384 0001 68"  # -- Port 9092, Host "h"
        "0009 504c41494e54455854"  # -- Listener "PLAINTEXT"
        "0000"  # -- SecurityProtocol 0
        "ffff"  # - Rack null
    )
    check_request(message, 5, header_v1(5), body)


def test_request_v7_topic_id_flexible() -> None:
    message = UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=2,
        broker_epoch=10,
        topic_states=(
            UpdateMetadataRequestTopicState(topic_name="t", topic_id=TOPIC_ID, partition_states=(partition(),)),
        ),
        live_brokers=(),
    )
    body = bytes.fromhex(
        "00000001 00000002"  # ControllerId 1, ControllerEpoch 2 (no isKRaftController before v8)
        "000000000000000a"  # BrokerEpoch 10
        "02"  # TopicStates: compact array, uvarint 1+1
        "02 74"  # - TopicName compact string "t"
        "00112233445566778899aabbccddeeff"  # - TopicId uuid (v7+)
        "02"  # - PartitionStates: compact array 1
        "00000000 00000002 00000001 00000005"  # -- PartitionIndex 0, ControllerEpoch 2, Leader 1, LeaderEpoch 5
        "03 00000001 00000002"  # -- Isr: compact [1, 2]
        "00000007"  # -- ZkVersion 7
        "03 00000001 00000002"  # -- Replicas: compact [1, 2]
        "01"  # -- OfflineReplicas: compact, empty
        "00"  # -- partition tag buffer
        "00"  # - topic tag buffer
        "01"  # LiveBrokers: compact, empty
        "00"  # body tag buffer (no Type before v8)
    )
    check_request(message, 7, header_v2(7), body)


def test_request_v8_kraft_controller_and_tagged_type() -> None:
    message = UpdateMetadataRequest(
        controller_id=3000,
        is_k_raft_controller=True,
        type_=2,
        controller_epoch=2,
        broker_epoch=10,
        topic_states=(
            UpdateMetadataRequestTopicState(
                topic_name="t",
                topic_id=TOPIC_ID,
                partition_states=(partition(isr=(1,)),),
            ),
        ),
        live_brokers=(
            UpdateMetadataRequestBroker(
                id_=1,
                endpoints=(
                    UpdateMetadataRequestEndpoint(port=9092, host="h", listener="PLAINTEXT", security_protocol=0),
                ),
                rack=None,
            ),
            UpdateMetadataRequestBroker(id_=2, rack="r"),
        ),
    )
    body = bytes.fromhex(
        "00000bb8"  # ControllerId 3000
        "01"  # isKRaftController true (v8+, KIP-866); Type is tagged, so it is not here
        "00000002"  # ControllerEpoch 2
        "000000000000000a"  # BrokerEpoch 10
        "02"  # TopicStates: compact array 1
        "02 74"  # - TopicName "t"
        "00112233445566778899aabbccddeeff"  # - TopicId
        "02"  # - PartitionStates: compact array 1
        "00000000 00000002 00000001 00000005"  # -- PartitionIndex 0, ControllerEpoch 2, Leader 1, LeaderEpoch 5
        "02 00000001"  # -- Isr: compact [1]
        "00000007"  # -- ZkVersion 7
        "03 00000001 00000002"  # -- Replicas: compact [1, 2]
        "01"  # -- OfflineReplicas: compact, empty
        "00"  # -- partition tag buffer
        "00"  # - topic tag buffer
        "03"  # LiveBrokers: compact array, uvarint 2+1
        "00000001"  # - Id 1
        "02"  # - Endpoints: compact array 1
        "00002384"  # -- Port 9092
        "02 68"  # -- Host compact "h"
        "0a 504c41494e54455854"  # -- Listener compact "PLAINTEXT" (uvarint 9+1)
        "0000"  # -- SecurityProtocol 0
        "00"  # -- endpoint tag buffer
        "00"  # - Rack null (compact nullable string: uvarint 0)
        "00"  # - broker tag buffer
        "00000002"  # - Id 2
        "01"  # - Endpoints: compact, empty
        "02 72"  # - Rack compact "r"
        "00"  # - broker tag buffer
        "01"  # body tag buffer: 1 tagged field
        "00 01 02"  # - tag 0 (Type), size 1, int8 2 = full snapshot
    )
    check_request(message, 8, header_v2(8), body)


def test_request_v8_type_at_its_default_is_not_written() -> None:
    message = UpdateMetadataRequest(controller_id=1, controller_epoch=2, live_brokers=())
    body = bytes.fromhex(
        "00000001 00"  # ControllerId 1, isKRaftController false
        "00000002 ffffffffffffffff"  # ControllerEpoch 2, BrokerEpoch -1 (the default)
        "01 01"  # TopicStates and LiveBrokers: compact, empty
        "00"  # body tag buffer: empty (Type 0 = unknown is the default)
    )
    check_request(message, 8, header_v2(8), body)


def test_request_v8_unknown_tags_are_kept() -> None:
    body = bytes.fromhex(
        "00000001 00 00000002 ffffffffffffffff 01 01"
        "02"  # body tag buffer: 2 tagged fields
        "00 01 01"  # - tag 0 (Type), size 1, int8 1 = incremental
        "05 02 abcd"  # - tag 5 (unknown to 3.9), size 2
    )
    decoded = decode_request(header_v2(8) + body).body
    assert isinstance(decoded, UpdateMetadataRequest)
    assert (decoded.type_, decoded.unknown_tags) == (1, ((5, b"\xab\xcd"),))
    assert codec(UpdateMetadataRequest, 8).encode(decoded) == body


@pytest.mark.parametrize(
    ("version", "error_code", "payload"),
    [
        (0, 0, "0000002a 0000"),  # response header v0 (the correlation id), ErrorCode 0
        (5, 11, "0000002a 000b"),  # v1-5 are the same as v0; ErrorCode 11 (STALE_CONTROLLER_EPOCH)
        (6, 11, "0000002a 00 000b 00"),  # v6+: response header v1 (a tag buffer), ErrorCode, body tag buffer
        (8, 0, "0000002a 00 0000 00"),
    ],
)
def test_response(version: int, error_code: int, payload: str) -> None:
    check_response(UpdateMetadataResponse(error_code=error_code), version, bytes.fromhex(payload))


def test_version_rules() -> None:
    grouped = UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=2,
        topic_states=(UpdateMetadataRequestTopicState(topic_name="t", partition_states=(partition(),)),),
        live_brokers=(),
    )
    ungrouped = UpdateMetadataRequest(
        controller_id=1, controller_epoch=2, ungrouped_partition_states=(partition(topic_name="t"),), live_brokers=()
    )
    # Neither partition layout is ignorable: each is refused outside its versions.
    with pytest.raises(EncodeError):
        codec(UpdateMetadataRequest, 4).encode(grouped)
    with pytest.raises(EncodeError):
        codec(UpdateMetadataRequest, 5).encode(ungrouped)
    # isKRaftController and Type are not ignorable: they cannot be sent before v8.
    base = UpdateMetadataRequest(controller_id=1, controller_epoch=2, live_brokers=())
    for not_before_v8 in (dataclasses.replace(base, is_k_raft_controller=True), dataclasses.replace(base, type_=1)):
        with pytest.raises(EncodeError):
            codec(UpdateMetadataRequest, 7).encode(not_before_v8)
    # The ignorable fields are dropped where they do not exist and decode to their defaults.
    broker = UpdateMetadataRequestBroker(
        id_=1,
        v0_host="h",
        v0_port=9092,
        endpoints=(UpdateMetadataRequestEndpoint(port=9092, host="h", listener="L", security_protocol=0),),
        rack=None,
    )
    state = partition(topic_name="t", offline_replicas=(2,))
    full = UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=2,
        broker_epoch=10,
        ungrouped_partition_states=(state,),
        live_brokers=(broker,),
    )
    v0 = codec(UpdateMetadataRequest, 0)
    decoded = v0.decode_exact(v0.encode(full))
    assert decoded.broker_epoch == -1
    assert decoded.ungrouped_partition_states[0].offline_replicas == ()
    assert decoded.live_brokers[0].endpoints == () and decoded.live_brokers[0].rack == ""
    v2 = codec(UpdateMetadataRequest, 2)
    decoded = v2.decode_exact(v2.encode(full))
    assert (decoded.live_brokers[0].v0_host, decoded.live_brokers[0].v0_port) == ("", 0)
    assert decoded.live_brokers[0].endpoints[0].listener == ""
    assert decoded.live_brokers[0].rack is None
    v6 = codec(UpdateMetadataRequest, 6)
    with_id = UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=2,
        topic_states=(UpdateMetadataRequestTopicState(topic_name="t", topic_id=TOPIC_ID),),
        live_brokers=(),
    )
    assert v6.decode_exact(v6.encode(with_id)).topic_states[0].topic_id == uuid.UUID(int=0)


@pytest.mark.parametrize("version", range(9))
@given(data=st.data())
def test_every_version_round_trips_with_unknown_tags_compiled_and_interpreted(
    version: int, data: st.DataObject
) -> None:
    """The registry and kio tests draw no unknown tags; a real v6+ sender may add some."""
    for cls in (UpdateMetadataRequest, UpdateMetadataResponse):
        message = data.draw(messages(cls, version, unknown_tags=True))
        compiled = codec(cls, version)
        encoded = compiled.encode(message)
        assert struct_for(cls, version).build(message) == encoded
        assert struct_for(cls, version).parse(encoded) == message
        assert compiled.decode_exact(encoded) == message
