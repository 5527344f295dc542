"""DeleteTopics (api key 20), versions 1-6 here, flexible from 4: delete topics by name or id.

Kafka defines v0-v6; fencer serves v1-v6 (Kafka 4 drops v0). The request is a plain list of
topic names up to v5; v1 adds the response's throttle time; v2 answers before throttling; v3 may
answer TOPIC_DELETION_DISABLED; v4 is the first flexible version; v5 adds a per-topic error
message and may answer THROTTLING_QUOTA_EXCEEDED (KIP-599); v6 replaces the name list with
(name or topic id) entries, and the response echoes the topic id and allows a null name.
"""

import uuid
from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.spec import (
    ARRAY,
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

API_KEY = ApiKey.DELETE_TOPICS


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicsRequestDeleteTopicState(Data):
    name: Annotated[str | None, F(STRING, "6+", nullable="6+")] = None
    topic_id: Annotated[uuid.UUID, F(UUID, "6+")] = ZERO_UUID


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicsRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="1-6", flexible="4+")
    topics: Annotated[
        tuple[DeleteTopicsRequestDeleteTopicState, ...], F(ARRAY(DeleteTopicsRequestDeleteTopicState), "6+")
    ] = ()
    topic_names: Annotated[tuple[str, ...], F(ARRAY(STRING), "0-5", ignorable=True)] = ()
    timeout_ms: Annotated[int, F(INT32)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicsResponseDeletableTopicResult(Data):
    name: Annotated[str | None, F(STRING, nullable="6+")]
    topic_id: Annotated[uuid.UUID, F(UUID, "6+", ignorable=True)] = ZERO_UUID
    error_code: Annotated[int, F(INT16)] = 0
    error_message: Annotated[str | None, F(STRING, "5+", nullable="5+", ignorable=True)] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicsResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="1-6", flexible="4+")
    throttle_time_ms: Annotated[int, F(INT32, "1+", ignorable=True)] = 0
    responses: Annotated[
        tuple[DeleteTopicsResponseDeletableTopicResult, ...],
        F(ARRAY(DeleteTopicsResponseDeletableTopicResult)),
    ] = ()
