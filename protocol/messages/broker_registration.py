"""BrokerRegistration (api key 62), versions 0-4, flexible from 0: a broker joins the cluster.

A starting broker announces its id, incarnation, listeners, supported features and rack; the
controller answers with the broker epoch it assigned. v1 adds IsMigratingZkBroker (ZooKeeper to
KRaft migration); v2 adds the broker's available LogDirs (KIP-858); v3 adds PreviousBrokerEpoch,
the epoch held before a clean shutdown (KIP-966); v4 is v3 on the wire, but a feature's minimum
supported version may now be 0 (KAFKA-17011). The response is the same in every version.
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
    STRING,
    UINT16,
    UUID,
    Api,
    Data,
    F,
)

API_KEY = ApiKey.BROKER_REGISTRATION


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationRequestListener(Data):
    name: Annotated[str, F(STRING)]
    host: Annotated[str, F(STRING)]
    port: Annotated[int, F(UINT16)]
    security_protocol: Annotated[int, F(INT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationRequestFeature(Data):
    name: Annotated[str, F(STRING)]
    min_supported_version: Annotated[int, F(INT16)] = 0
    max_supported_version: Annotated[int, F(INT16)] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-4", flexible="0+")
    broker_id: Annotated[BrokerId, F(INT32)]
    cluster_id: Annotated[str, F(STRING)]
    incarnation_id: Annotated[uuid.UUID, F(UUID)]
    listeners: Annotated[
        tuple[BrokerRegistrationRequestListener, ...], F(ARRAY(BrokerRegistrationRequestListener))
    ] = ()
    features: Annotated[tuple[BrokerRegistrationRequestFeature, ...], F(ARRAY(BrokerRegistrationRequestFeature))] = ()
    rack: Annotated[str | None, F(STRING, nullable="0+")] = ""
    is_migrating_zk_broker: Annotated[bool, F(BOOL, "1+")] = False
    log_dirs: Annotated[tuple[uuid.UUID, ...], F(ARRAY(UUID), "2+", ignorable=True)] = ()
    previous_broker_epoch: Annotated[BrokerEpoch, F(INT64, "3+", ignorable=True)] = BrokerEpoch(-1)


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-4", flexible="0+")
    throttle_time_ms: Annotated[int, F(INT32)] = 0
    error_code: Annotated[int, F(INT16)] = 0
    broker_epoch: Annotated[BrokerEpoch, F(INT64)] = BrokerEpoch(-1)
