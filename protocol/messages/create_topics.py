"""CreateTopics (api key 19), versions 2-7 here, flexible from 5: create topics, or validate them.

Kafka defines v0-v7; fencer serves v2-v7 (Kafka 4 drops v0-v1). Fields keep Kafka's own version
ranges, so ValidateOnly (v1+), the response's ErrorMessage (v1+) and ThrottleTimeMs (v2+) are in
every version served. v3 answers before throttling; v4 lets NumPartitions / ReplicationFactor be
-1 (broker defaults) without manual assignments (KIP-464); v5 is the first flexible version, and
its response reports the created topic's partition count, replication factor and configs, or a
tagged TopicConfigErrorCode (KIP-525); v6 may answer THROTTLING_QUOTA_EXCEEDED (KIP-599); v7's
response carries the new topic's id.
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
    REQUEST,
    RESPONSE,
    STRING,
    UUID,
    ZERO_UUID,
    Api,
    Data,
    F,
)

API_KEY = ApiKey.CREATE_TOPICS


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsRequestCreatableReplicaAssignment(Data):
    partition_index: Annotated[int, F(INT32)]
    broker_ids: Annotated[tuple[int, ...], F(ARRAY(INT32))] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsRequestCreatableTopicConfig(Data):
    name: Annotated[str, F(STRING)]
    value: Annotated[str | None, F(STRING, nullable="0+")] = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsRequestCreatableTopic(Data):
    name: Annotated[str, F(STRING)]
    num_partitions: Annotated[int, F(INT32)] = 0
    replication_factor: Annotated[int, F(INT16)] = 0
    assignments: Annotated[
        tuple[CreateTopicsRequestCreatableReplicaAssignment, ...],
        F(ARRAY(CreateTopicsRequestCreatableReplicaAssignment)),
    ] = ()
    configs: Annotated[
        tuple[CreateTopicsRequestCreatableTopicConfig, ...], F(ARRAY(CreateTopicsRequestCreatableTopicConfig))
    ] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="2-7", flexible="5+")
    topics: Annotated[tuple[CreateTopicsRequestCreatableTopic, ...], F(ARRAY(CreateTopicsRequestCreatableTopic))]
    timeout_ms: Annotated[int, F(INT32)] = 60000
    validate_only: Annotated[bool, F(BOOL, "1+")] = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsResponseCreatableTopicConfigs(Data):
    name: Annotated[str, F(STRING, "5+")] = ""
    value: Annotated[str | None, F(STRING, "5+", nullable="5+")] = ""
    read_only: Annotated[bool, F(BOOL, "5+")] = False
    config_source: Annotated[int, F(INT8, "5+", ignorable=True)] = -1
    is_sensitive: Annotated[bool, F(BOOL, "5+")] = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsResponseCreatableTopicResult(Data):
    name: Annotated[str, F(STRING)]
    topic_id: Annotated[uuid.UUID, F(UUID, "7+", ignorable=True)] = ZERO_UUID
    error_code: Annotated[int, F(INT16)] = 0
    error_message: Annotated[str | None, F(STRING, "1+", nullable="0+", ignorable=True)] = ""
    topic_config_error_code: Annotated[int, F(INT16, "5+", tag=0, ignorable=True)] = 0
    num_partitions: Annotated[int, F(INT32, "5+", ignorable=True)] = -1
    replication_factor: Annotated[int, F(INT16, "5+", ignorable=True)] = -1
    configs: Annotated[
        tuple[CreateTopicsResponseCreatableTopicConfigs, ...] | None,
        F(ARRAY(CreateTopicsResponseCreatableTopicConfigs), "5+", nullable="5+", ignorable=True),
    ] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="2-7", flexible="5+")
    throttle_time_ms: Annotated[int, F(INT32, "2+", ignorable=True)] = 0
    topics: Annotated[
        tuple[CreateTopicsResponseCreatableTopicResult, ...],
        F(ARRAY(CreateTopicsResponseCreatableTopicResult)),
    ] = ()
