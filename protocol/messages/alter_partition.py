"""AlterPartition (api key 56), versions 0-3, flexible from 0. Version 0 is KIP-497's AlterIsr.

v1 adds LeaderRecoveryState (KIP-704); v2 replaces topic names with topic ids (KIP-841);
v3 replaces NewIsr with NewIsrWithEpochs, carrying each member's broker epoch (KIP-903).
"""

import uuid
from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.ids import BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch
from protocol.spec import (
    ARRAY,
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

API_KEY = ApiKey.ALTER_PARTITION


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionRequestBrokerState(Data):
    broker_id: Annotated[BrokerId, F(INT32, "3+")] = BrokerId(0)
    broker_epoch: Annotated[BrokerEpoch, F(INT64, "3+")] = BrokerEpoch(-1)


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionRequestPartitionData(Data):
    partition_index: Annotated[int, F(INT32)]
    leader_epoch: Annotated[LeaderEpoch, F(INT32)]
    new_isr: Annotated[tuple[BrokerId, ...], F(ARRAY(INT32), "0-2")] = ()
    new_isr_with_epochs: Annotated[
        tuple[AlterPartitionRequestBrokerState, ...], F(ARRAY(AlterPartitionRequestBrokerState), "3+")
    ] = ()
    leader_recovery_state: Annotated[int, F(INT8, "1+")] = 0
    partition_epoch: Annotated[PartitionEpoch, F(INT32)]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionRequestTopicData(Data):
    topic_name: Annotated[str, F(STRING, "0-1")] = ""
    topic_id: Annotated[uuid.UUID, F(UUID, "2+")] = ZERO_UUID
    partitions: Annotated[tuple[AlterPartitionRequestPartitionData, ...], F(ARRAY(AlterPartitionRequestPartitionData))]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-3", flexible="0+")
    broker_id: Annotated[BrokerId, F(INT32)]
    broker_epoch: Annotated[BrokerEpoch, F(INT64)] = BrokerEpoch(-1)
    topics: Annotated[tuple[AlterPartitionRequestTopicData, ...], F(ARRAY(AlterPartitionRequestTopicData))]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionResponsePartitionData(Data):
    partition_index: Annotated[int, F(INT32)]
    error_code: Annotated[int, F(INT16)] = 0
    leader_id: Annotated[int, F(INT32)] = 0
    leader_epoch: Annotated[int, F(INT32)] = 0
    isr: Annotated[tuple[int, ...], F(ARRAY(INT32))] = ()
    leader_recovery_state: Annotated[int, F(INT8, "1+", ignorable=True)] = 0
    partition_epoch: Annotated[int, F(INT32)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionResponseTopicData(Data):
    topic_name: Annotated[str, F(STRING, "0-1", ignorable=True)] = ""
    topic_id: Annotated[uuid.UUID, F(UUID, "2+", ignorable=True)] = ZERO_UUID
    partitions: Annotated[
        tuple[AlterPartitionResponsePartitionData, ...], F(ARRAY(AlterPartitionResponsePartitionData))
    ] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-3", flexible="0+")
    throttle_time_ms: Annotated[int, F(INT32)] = 0
    error_code: Annotated[int, F(INT16)] = 0
    topics: Annotated[tuple[AlterPartitionResponseTopicData, ...], F(ARRAY(AlterPartitionResponseTopicData))] = ()


# KIP-497's name for version 0: the same key and the same bytes.
AlterIsrRequest = AlterPartitionRequest
AlterIsrResponse = AlterPartitionResponse
