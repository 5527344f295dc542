"""UpdateMetadata (api key 6), versions 0-8, flexible from 6.

A ZooKeeper-mode controller (and a KRaft controller migrating a ZooKeeper cluster, KIP-866)
sends it to every live broker, alongside LeaderAndIsr, so that each broker's metadata cache
knows every partition's leader, ISR and replicas and every live broker's endpoints (what a
client's Metadata request is answered from); the broker answers with one error code. Kafka 4.0
removed it with ZooKeeper.

fencer's controller neither sends nor serves it: the codec has it so that fencer's analytics can
decode it in captures of real clusters. It is in `DECODE_ONLY_API_KEYS` (controller.ops.served),
in neither of the other two sets, by decision:
- `INBOUND_API_KEYS` is what the daemon decodes on its listener (controller/server/connection.py
  passes it as `allowed` to `decode_served`) and what ApiVersions lists
  (controller/ops/cluster_info.py). A controller never receives UpdateMetadata, so a request
  with api key 6 is still refused as an unknown api: no answer, the connection closed, counted
  as `unknown_api`, exactly as before the codec knew the key; ApiVersions does not list it.
- `OUTBOUND_API_KEYS` means "the controller sends it to brokers, and the broker simulator serves
  it". fencer's controller sends brokers LeaderAndIsr and StopReplica, after an ApiVersions
  (controller/control/channel.py and requests.py build nothing else), and the simulator's
  listener (broker_sim/shell/listener.py, SERVED_API_KEYS) closes the connection on an
  UpdateMetadata; listing it there would make that set say something untrue. The fleet's
  `warm_codecs` compiles every registered codec, this one too (about 0.07 s); nothing else in
  the daemon or the fleet touches it.

Request: v0 lists ungrouped partition states (each with its topic name) and live brokers with
a single host and port; v1 gives each broker a list of endpoints (port, host, security
protocol); v2 adds the broker's nullable rack (KIP-36); v3 adds each endpoint's listener name
(KIP-103); v4 adds each partition's offline replicas (KIP-112); v5 adds the broker epoch
(KIP-380) and groups partition states by topic; v6 is the first flexible version; v7 adds the
topic id (KIP-516); v8 adds isKRaftController and the tagged request Type (tag 0: 0 unknown,
1 incremental, 2 full; KIP-866).

Response: one error code in every version (flexible from v6).
"""

import uuid
from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.spec import (
    ARRAY,
    BOOL,
    INT8,
    INT16,
    INT32,
    INT64,
    REQUEST,
    RESPONSE,
    STRING,
    UUID,
    ZERO_UUID,
    Api,
    Data,
    F,
)

API_KEY = ApiKey.UPDATE_METADATA


# Kafka's common struct UpdateMetadataPartitionState: both UngroupedPartitionStates (v0-4) and
# TopicStates[].PartitionStates (v5+).
@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataRequestPartitionState(Data):
    topic_name: Annotated[str, F(STRING, "0-4", ignorable=True)] = ""
    partition_index: Annotated[int, F(INT32)]
    controller_epoch: Annotated[int, F(INT32)]
    leader: Annotated[int, F(INT32)]
    leader_epoch: Annotated[int, F(INT32)]
    isr: Annotated[tuple[int, ...], F(ARRAY(INT32))]
    zk_version: Annotated[int, F(INT32)]
    replicas: Annotated[tuple[int, ...], F(ARRAY(INT32))]
    offline_replicas: Annotated[tuple[int, ...], F(ARRAY(INT32), "4+", ignorable=True)] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataRequestTopicState(Data):
    topic_name: Annotated[str, F(STRING, "5+")] = ""
    topic_id: Annotated[uuid.UUID, F(UUID, "7+", ignorable=True)] = ZERO_UUID
    partition_states: Annotated[
        tuple[UpdateMetadataRequestPartitionState, ...], F(ARRAY(UpdateMetadataRequestPartitionState), "5+")
    ] = ()


# Port comes before host, as in the schema.
@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataRequestEndpoint(Data):
    port: Annotated[int, F(INT32, "1+")] = 0
    host: Annotated[str, F(STRING, "1+")] = ""
    listener: Annotated[str, F(STRING, "3+", ignorable=True)] = ""
    security_protocol: Annotated[int, F(INT16, "1+")] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataRequestBroker(Data):
    id_: Annotated[int, F(INT32)]
    v0_host: Annotated[str, F(STRING, "0", ignorable=True)] = ""
    v0_port: Annotated[int, F(INT32, "0", ignorable=True)] = 0
    endpoints: Annotated[
        tuple[UpdateMetadataRequestEndpoint, ...], F(ARRAY(UpdateMetadataRequestEndpoint), "1+", ignorable=True)
    ] = ()
    # The schema says nullableVersions "0+" for a field that exists from v2: nullable wherever it is.
    rack: Annotated[str | None, F(STRING, "2+", nullable="0+", ignorable=True)] = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-8", flexible="6+")
    controller_id: Annotated[int, F(INT32)]
    is_k_raft_controller: Annotated[bool, F(BOOL, "8+")] = False
    # v8+, tagged (tag 0, in the body's tag buffer): 0 = unknown, 1 = incremental, 2 = full.
    type_: Annotated[int, F(INT8, "8+", tag=0)] = 0
    controller_epoch: Annotated[int, F(INT32)]
    broker_epoch: Annotated[int, F(INT64, "5+", ignorable=True)] = -1
    ungrouped_partition_states: Annotated[
        tuple[UpdateMetadataRequestPartitionState, ...], F(ARRAY(UpdateMetadataRequestPartitionState), "0-4")
    ] = ()
    topic_states: Annotated[
        tuple[UpdateMetadataRequestTopicState, ...], F(ARRAY(UpdateMetadataRequestTopicState), "5+")
    ] = ()
    live_brokers: Annotated[tuple[UpdateMetadataRequestBroker, ...], F(ARRAY(UpdateMetadataRequestBroker))]


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-8", flexible="6+")
    error_code: Annotated[int, F(INT16)] = 0
