"""ControlledShutdown (api key 7), versions 0-3, flexible from 3.

A broker that is about to stop asks the controller to move leadership away from it; the
controller answers with the partitions the broker still leads (retry until none are left).

v0 is the only request in the protocol sent with request header v0 (no client id); v1 has the
same body behind the standard header; v2 adds the broker epoch (KIP-380), so a controller can
reject a shutdown request from an older incarnation of the broker; v3 is the first flexible
version. The response body is the same in every version.
"""

from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.ids import BrokerEpoch, BrokerId
from protocol.spec import ARRAY, INT16, INT32, INT64, REQUEST, RESPONSE, STRING, Api, Data, F

API_KEY = ApiKey.CONTROLLED_SHUTDOWN


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-3", flexible="3+")
    broker_id: Annotated[BrokerId, F(INT32)]
    broker_epoch: Annotated[BrokerEpoch, F(INT64, "2+", ignorable=True)] = BrokerEpoch(-1)


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownResponseRemainingPartition(Data):
    topic_name: Annotated[str, F(STRING)]
    partition_index: Annotated[int, F(INT32)]


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-3", flexible="3+")
    error_code: Annotated[int, F(INT16)] = 0
    remaining_partitions: Annotated[
        tuple[ControlledShutdownResponseRemainingPartition, ...],
        F(ARRAY(ControlledShutdownResponseRemainingPartition)),
    ] = ()
