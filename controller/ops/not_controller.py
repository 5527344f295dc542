"""What a controller that is not the active one answers: NOT_CONTROLLER (41).

Rules (Kafka's QuorumController raises NotControllerException, and each request's
`getErrorResponse` shapes the answer):
- BrokerRegistration, BrokerHeartbeat, ControlledShutdown, AlterPartition, AlterReplicaState
  (fencer's own) and DescribeCluster: the top-level error code (DescribeCluster with the message).
- CreateTopics and DeleteTopics: every topic of the request with the error and the message (no
  top-level code exists); DeleteTopics names each topic as the request did (names before v6,
  names or ids from v6).
- ElectLeaders: every requested partition with the error and the message, and from v1 the
  top-level code too (v0 has none: a v0 request for every partition, null, gets an empty answer).
- The ACL APIs, as `ops.acls.error_response` shapes them: DescribeAcls the top-level
  code with the message, CreateAcls every creation, DeleteAcls every filter. This is protocol.md's
  rule, not quite Kafka 3.9's: its AclApis answers on any controller without asking the quorum, so
  a standby without an authorizer says SECURITY_DISABLED, and with StandardAuthorizer only
  CreateAcls and DeleteAcls go to the active controller (NOT_CONTROLLER per creation or filter, the
  shape here) while DescribeAcls is read from the standby's own copy of the ACLs.
- The message is Kafka's: "The active controller appears to be node N", or "No controller
  appears to be active." while no leader is known.
- ApiVersions and the quorum's own RPCs are never answered this way: every node serves them.
- `error_answer` is these shapes for any one error decided before the request is: the core answers
  the authorizer's CLUSTER_AUTHORIZATION_FAILED with it too (`ops.authorization`).
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import AlterPartitionResponse
from protocol.messages.alter_replica_state import AlterReplicaStateResponse
from protocol.messages.broker_heartbeat import BrokerHeartbeatResponse
from protocol.messages.broker_registration import BrokerRegistrationResponse
from protocol.messages.controlled_shutdown import ControlledShutdownResponse
from protocol.messages.create_topics import CreateTopicsResponse, CreateTopicsResponseCreatableTopicResult
from protocol.messages.delete_topics import DeleteTopicsResponse, DeleteTopicsResponseDeletableTopicResult
from protocol.messages.describe_cluster import DescribeClusterResponse
from protocol.messages.elect_leaders import (
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
)
from protocol.spec import Data

from .acls import error_response

ERROR = ErrorCode.NOT_CONTROLLER


def message(leader_id: int | None) -> str:
    if leader_id is None or leader_id < 0:
        return "No controller appears to be active."
    return f"The active controller appears to be node {leader_id}"


def not_controller(api_key: int, version: int, request: Any, leader_id: int | None) -> Data:
    """The NOT_CONTROLLER answer to a broker or admin request (see the module's rules)."""
    return error_answer(api_key, version, request, ERROR, message(leader_id))


def error_answer(api_key: int, version: int, request: Any, error: ErrorCode, text: str) -> Data:
    """A request's `getErrorResponse` for one error raised before anything was decided, in the shapes
    of the module's rules (`text` where the response carries a message); the authorizer's
    CLUSTER_AUTHORIZATION_FAILED (`ops.authorization`) is answered in these shapes too."""
    if api_key == ApiKey.CREATE_TOPICS:
        return CreateTopicsResponse(
            topics=tuple(
                CreateTopicsResponseCreatableTopicResult(name=topic.name, error_code=error, error_message=text)
                for topic in request.topics
            )
        )
    if api_key == ApiKey.DELETE_TOPICS:
        named = (
            [(state.name, state.topic_id) for state in request.topics]
            if version >= 6
            else [(name, None) for name in request.topic_names]
        )
        return DeleteTopicsResponse(
            responses=tuple(
                DeleteTopicsResponseDeletableTopicResult(name=name, error_code=error, error_message=text)
                if topic_id is None
                else DeleteTopicsResponseDeletableTopicResult(
                    name=name, topic_id=topic_id, error_code=error, error_message=text
                )
                for name, topic_id in named
            )
        )
    if api_key == ApiKey.ELECT_LEADERS:
        results = tuple(
            ElectLeadersResponseReplicaElectionResult(
                topic=topic.topic,
                partition_result=tuple(
                    ElectLeadersResponsePartitionResult(partition_id=partition, error_code=error, error_message=text)
                    for partition in topic.partitions
                ),
            )
            for topic in request.topic_partitions or ()
        )
        return ElectLeadersResponse(error_code=error if version >= 1 else 0, replica_election_results=results)
    if api_key == ApiKey.DESCRIBE_CLUSTER:
        return DescribeClusterResponse(error_code=error, error_message=text)
    if api_key in (ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
        return error_response(api_key, request, error, text)
    top_level: dict[int, type[Data]] = {
        ApiKey.BROKER_REGISTRATION: BrokerRegistrationResponse,
        ApiKey.BROKER_HEARTBEAT: BrokerHeartbeatResponse,
        ApiKey.CONTROLLED_SHUTDOWN: ControlledShutdownResponse,
        ApiKey.ALTER_PARTITION: AlterPartitionResponse,
        ApiKey.ALTER_REPLICA_STATE: AlterReplicaStateResponse,
    }
    response = top_level.get(api_key)
    if response is None:
        raise ValueError(f"api key {api_key} is not answered {ErrorCode(error).name} here")
    return response(error_code=error)  # type: ignore[call-arg]
