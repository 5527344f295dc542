"""ElectLeaders (api key 43), versions 0-2, flexible from 2.

An admin client asks the controller to run leader elections for some partitions (or, with a
null partition list, for every partition of the cluster, whatever the election type).

v1 adds ElectionType (KIP-460): 0 elects the preferred replica, 1 runs an unclean election
(the first live replica) where no in-sync replica is left; v1 responses add a top-level error
code. v2 is the first flexible version.
"""

from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.api_keys import ApiKey
from protocol.spec import ARRAY, INT8, INT16, INT32, REQUEST, RESPONSE, STRING, Api, Data, F

API_KEY = ApiKey.ELECT_LEADERS

#: ElectionType values (v1+).
PREFERRED = 0
UNCLEAN = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersRequestTopicPartitions(Data):
    topic: Annotated[str, F(STRING)]
    partitions: Annotated[tuple[int, ...], F(ARRAY(INT32))]


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersRequest(Data):
    API: ClassVar[Api] = Api.of(API_KEY, REQUEST, valid="0-2", flexible="2+")
    election_type: Annotated[int, F(INT8, "1+")] = PREFERRED
    # None: every partition of the cluster.
    topic_partitions: Annotated[
        tuple[ElectLeadersRequestTopicPartitions, ...] | None,
        F(ARRAY(ElectLeadersRequestTopicPartitions), nullable="0+"),
    ]
    timeout_ms: Annotated[int, F(INT32)] = 60000


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersResponsePartitionResult(Data):
    partition_id: Annotated[int, F(INT32)]
    error_code: Annotated[int, F(INT16)] = 0
    error_message: Annotated[str | None, F(STRING, nullable="0+")] = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersResponseReplicaElectionResult(Data):
    topic: Annotated[str, F(STRING)]
    partition_result: Annotated[
        tuple[ElectLeadersResponsePartitionResult, ...], F(ARRAY(ElectLeadersResponsePartitionResult))
    ] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersResponse(Data):
    API: ClassVar[Api] = Api.of(API_KEY, RESPONSE, valid="0-2", flexible="2+")
    throttle_time_ms: Annotated[int, F(INT32)] = 0
    error_code: Annotated[int, F(INT16, "1+")] = 0
    replica_election_results: Annotated[
        tuple[ElectLeadersResponseReplicaElectionResult, ...],
        F(ARRAY(ElectLeadersResponseReplicaElectionResult)),
    ] = ()
