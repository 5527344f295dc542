"""BrokerHeartbeat (api key 63), versions 0-1, flexible from 0: a registered broker's liveness.

Each heartbeat reports the broker's epoch and metadata offset and whether it wants to be fenced
or to shut down; the answer says whether it has caught up, is fenced, and may finish shutting
down. v1 adds the tagged OfflineLogDirs (tag 0): directories that failed on the broker (KIP-858).
The response is the same in both versions.
"""

import uuid
from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.ids import BrokerEpoch, BrokerId
from protocol.spec import (
    ARRAY,
    BOOL,
    INT16,
    INT32,
    INT64,
    REQUEST,
    RESPONSE,
    UUID,
    Api,
    Data,
    F,
)

API_KEY = ApiKey.BROKER_HEARTBEAT


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerHeartbeatRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-1", flexible="0+")
    broker_id: Annotated[BrokerId, F(INT32)]
    broker_epoch: Annotated[BrokerEpoch, F(INT64)] = BrokerEpoch(-1)
    current_metadata_offset: Annotated[int, F(INT64)] = 0
    want_fence: Annotated[bool, F(BOOL)] = False
    want_shut_down: Annotated[bool, F(BOOL)] = False
    offline_log_dirs: Annotated[tuple[uuid.UUID, ...], F(ARRAY(UUID), "1+", tag=0)] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerHeartbeatResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-1", flexible="0+")
    throttle_time_ms: Annotated[int, F(INT32)] = 0
    error_code: Annotated[int, F(INT16)] = 0
    is_caught_up: Annotated[bool, F(BOOL)] = False
    is_fenced: Annotated[bool, F(BOOL)] = True
    should_shut_down: Annotated[bool, F(BOOL)] = False
