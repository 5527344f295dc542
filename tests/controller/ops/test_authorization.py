"""Authorization in the core: each API's check as Kafka's ControllerApis makes it.

Every API with a cluster check is refused CLUSTER_AUTHORIZATION_FAILED (31) in its response's
shape to a principal without the operation, writes nothing and leaves a denial; an ALLOW ACL for
the operation lets it through; DENY beats ALLOW; super users need no ACL; allow-everyone applies
only to a resource without ACLs. CreateTopics and DeleteTopics are checked per topic (29),
LITERAL and PREFIXED patterns alike, without revealing which topics exist.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from controller.auth.acl import CLUSTER_NAME
from controller.auth.authorizer import AuthorizerConfig
from controller.core import denied_answer
from controller.ops.authorization import (
    CLUSTER_OPERATIONS,
    RequestContext,
    authorize_api,
    authorizer_config,
    quorum_denied,
)
from controller.ops.served import served_versions
from controller.state.cluster import ReplayError
from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.api_keys import ApiKey
from protocol.compiler import codec
from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import AlterPartitionRequest, AlterPartitionRequestTopicData
from protocol.messages.alter_replica_state import AlterReplicaStateRequest, AlterReplicaStateRequestTopicReplicas
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.controlled_shutdown import ControlledShutdownRequest
from protocol.messages.create_acls import CreateAclsRequest, CreateAclsRequestAclCreation
from protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsRequestCreatableTopic
from protocol.messages.delete_acls import DeleteAclsRequest, DeleteAclsRequestDeleteAclsFilter
from protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicsRequestDeleteTopicState
from protocol.messages.describe_acls import DescribeAclsRequest
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.messages.elect_leaders import ElectLeadersRequest, ElectLeadersRequestTopicPartitions
from protocol.records.metadata import AccessControlEntryRecord, RemoveTopicRecord, TopicRecord
from protocol.registry import api, encode_response
from protocol.spec import ZERO_UUID, Data

from ...protocol.kio_bridge import kio_decode, kio_payload_class
from ..harness import Harness

ADMIN = RequestContext("User:admin", "10.0.0.1")
ALICE = RequestContext("User:alice", "10.0.0.2")
BOB = RequestContext("User:bob", "10.0.0.3")
DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
_ids = itertools.count(1)


def authorized(allow_everyone: bool = False, **options: Any) -> Harness:
    """Three brokers and a topic (set up by the super user), under StandardAuthorizer."""
    config = AuthorizerConfig(frozenset({ADMIN.principal}), allow_everyone_if_no_acl_found=allow_everyone)
    h = Harness(authorizer=config, **options)
    for broker_id in (1, 2, 3):
        h.send(h.registration(broker_id), 3, ADMIN)
    for broker_id in (1, 2, 3):
        heartbeat = BrokerHeartbeatRequest(
            broker_id=broker_id, broker_epoch=h.epoch(broker_id), current_metadata_offset=h.next_offset
        )
        response, _ = h.send(heartbeat, 1, ADMIN)
        assert response.error_code == 0 and not response.is_fenced
    topic = CreateTopicsRequestCreatableTopic(name="orders", num_partitions=2, replication_factor=3)
    response, _ = h.send(CreateTopicsRequest(topics=(topic,)), 7, ADMIN)
    assert response.topics[0].error_code == 0
    h.core.take_denials()
    return h


def acl(
    h: Harness,
    principal: str,
    operation: AclOperation,
    *,
    permission: AclPermissionType = AclPermissionType.ALLOW,
    resource_type: ResourceType = ResourceType.CLUSTER,
    name: str = CLUSTER_NAME,
    pattern: PatternType = PatternType.LITERAL,
    host: str = "*",
) -> None:
    """An ACL, as the log would bring it (replayed)."""
    record = AccessControlEntryRecord(
        id=uuid.UUID(int=next(_ids)),
        resource_type=resource_type,
        resource_name=name,
        pattern_type=pattern,
        principal=principal,
        host=host,
        operation=operation,
        permission_type=permission,
    )
    h.commit([(record, 0)])


# ---------------------------------------------------------------------- the cluster-checked APIs
def _registration(h: Harness) -> Data:
    return h.registration(1, generation=1)


def _heartbeat(h: Harness) -> Data:
    return BrokerHeartbeatRequest(broker_id=1, broker_epoch=h.epoch(1), current_metadata_offset=h.next_offset)


def _alter_partition(h: Harness) -> Data:
    part = h.partition("orders")
    data = h.isr_data(2, 0, list(part.isr[:2]), part.leader_epoch, part.partition_epoch)
    topic = AlterPartitionRequestTopicData(topic_id=h.topic_id("orders"), partitions=(data,))
    return AlterPartitionRequest(broker_id=part.leader, broker_epoch=h.epoch(part.leader), topics=(topic,))


def _shutdown(h: Harness) -> Data:
    return ControlledShutdownRequest(broker_id=2, broker_epoch=h.epoch(2))


def _replica_state(h: Harness) -> Data:
    topic = AlterReplicaStateRequestTopicReplicas(name="orders", partitions=(0,))
    return AlterReplicaStateRequest(broker_id=3, broker_epoch=h.epoch(3), new_state=1, topics=(topic,))


def _elect(h: Harness) -> Data:
    return ElectLeadersRequest(
        election_type=0, topic_partitions=(ElectLeadersRequestTopicPartitions(topic="orders", partitions=(0, 1)),)
    )


def _creation() -> CreateAclsRequestAclCreation:
    return CreateAclsRequestAclCreation(
        resource_type=ResourceType.TOPIC,
        resource_name="orders",
        principal="User:carol",
        host="*",
        operation=AclOperation.READ,
        permission_type=AclPermissionType.ALLOW,
    )


def _filter() -> DeleteAclsRequestDeleteAclsFilter:
    """carol's ACLs (the test's own ACLs are left alone)."""
    return DeleteAclsRequestDeleteAclsFilter(
        resource_type_filter=ResourceType.ANY,
        resource_name_filter=None,
        pattern_type_filter=PatternType.ANY,
        principal_filter="User:carol",
        host_filter=None,
        operation=AclOperation.ANY,
        permission_type=AclPermissionType.ANY,
    )


def _describe_acls(h: Harness) -> Data:
    return DescribeAclsRequest(
        resource_type_filter=ResourceType.ANY,
        resource_name_filter=None,
        pattern_type_filter=PatternType.ANY,
        principal_filter=None,
        host_filter=None,
        operation=AclOperation.ANY,
        permission_type=AclPermissionType.ANY,
    )


def _top(response: Any) -> list[int]:
    return [response.error_code]


def _partitions(response: Any) -> list[int]:
    return [p.error_code for r in response.replica_election_results for p in r.partition_result]


#: (api, version, request, the response's error codes, the operation it needs)
CHECKED: list[tuple[ApiKey, int, Callable[[Harness], Data], Callable[[Any], list[int]], AclOperation]] = [
    (ApiKey.BROKER_REGISTRATION, 3, _registration, _top, AclOperation.CLUSTER_ACTION),
    (ApiKey.BROKER_HEARTBEAT, 1, _heartbeat, _top, AclOperation.CLUSTER_ACTION),
    (ApiKey.ALTER_PARTITION, 2, _alter_partition, _top, AclOperation.CLUSTER_ACTION),
    (ApiKey.CONTROLLED_SHUTDOWN, 3, _shutdown, _top, AclOperation.CLUSTER_ACTION),
    (ApiKey.ALTER_REPLICA_STATE, 0, _replica_state, _top, AclOperation.CLUSTER_ACTION),
    (ApiKey.ELECT_LEADERS, 0, _elect, _partitions, AclOperation.ALTER),
    (ApiKey.ELECT_LEADERS, 2, _elect, lambda r: [r.error_code, *_partitions(r)], AclOperation.ALTER),
    (ApiKey.DESCRIBE_CLUSTER, 1, lambda h: DescribeClusterRequest(), _top, AclOperation.ALTER),
    (ApiKey.DESCRIBE_ACLS, 3, _describe_acls, _top, AclOperation.DESCRIBE),
    (
        ApiKey.CREATE_ACLS,
        3,
        lambda h: CreateAclsRequest(creations=(_creation(), _creation())),
        lambda r: [x.error_code for x in r.results],
        AclOperation.ALTER,
    ),
    (
        ApiKey.DELETE_ACLS,
        1,
        lambda h: DeleteAclsRequest(filters=(_filter(),)),
        lambda r: [x.error_code for x in r.filter_results],
        AclOperation.ALTER,
    ),
]
IDS = [f"{api(key).name}-v{version}" for key, version, *_ in CHECKED]


@pytest.mark.parametrize(("key", "version", "request_of", "codes", "operation"), CHECKED, ids=IDS)
def test_a_principal_without_the_operation_is_refused_and_nothing_is_written(
    key: ApiKey,
    version: int,
    request_of: Callable[[Harness], Data],
    codes: Callable[[Any], list[int]],
    operation: AclOperation,
) -> None:
    h = authorized()
    acl(h, "User:carol", AclOperation.READ, resource_type=ResourceType.TOPIC, name="orders")  # for DeleteAcls
    acl(h, ALICE.principal, AclOperation.ALL, resource_type=ResourceType.TOPIC, name="orders")  # not the cluster
    h.advance(1, expire=False)
    before, log_end = h.core.durable_view(), h.next_offset
    sessions = dict(h.core.state.heartbeats.last_contact_ns)
    request = request_of(h)
    response, records = h.send(request, version, ALICE)
    assert response == denied_answer(key, version, request, ALICE)  # what a standby's shell answers too
    assert type(response) is api(key).response
    found = codes(response)
    assert found and set(found) == {DENIED}
    assert records == [] and h.next_offset == log_end and h.core.durable_view() == before
    assert h.core.state.heartbeats.last_contact_ns == sessions  # a refused heartbeat extends no session
    messages = [getattr(response, "error_message", None)] + [
        p.error_message for r in getattr(response, "replica_election_results", ()) for p in r.partition_result
    ]
    messages += [x.error_message for x in getattr(response, "results", ()) + getattr(response, "filter_results", ())]
    expected = f"Request {api(key).name} is not authorized: principal {ALICE.principal} may not {operation.name}"
    for message in filter(None, messages):
        assert message == f"{expected} on the cluster."
    [denial] = h.core.take_denials()
    assert (denial.api, denial.principal, denial.host) == (api(key).name, ALICE.principal, ALICE.host)
    assert denial.refused == ((operation, ResourceType.CLUSTER, CLUSTER_NAME),)
    encode_response(response, version, correlation_id=1)
    assert authorize_api(h.core.authorizer(), ALICE, key) == DENIED


@pytest.mark.parametrize(("key", "version", "request_of", "codes", "operation"), CHECKED, ids=IDS)
def test_an_allow_acl_for_the_operation_lets_the_request_through(
    key: ApiKey,
    version: int,
    request_of: Callable[[Harness], Data],
    codes: Callable[[Any], list[int]],
    operation: AclOperation,
) -> None:
    h = authorized()
    acl(h, "User:carol", AclOperation.READ, resource_type=ResourceType.TOPIC, name="orders")
    acl(h, ALICE.principal, operation, host=ALICE.host)
    response, _ = h.send(request_of(h), version, ALICE)
    assert DENIED not in codes(response)
    assert h.core.take_denials() == []
    assert authorize_api(h.core.authorizer(), ALICE, key) is None
    # the same ACL from another host does not apply
    assert authorize_api(h.core.authorizer(), RequestContext(ALICE.principal, "10.9.9.9"), key) == DENIED


def test_an_operation_that_does_not_imply_the_one_needed_is_not_enough() -> None:
    h = authorized()
    acl(h, ALICE.principal, AclOperation.DESCRIBE)  # DescribeCluster needs ALTER on a controller
    response, _ = h.send(DescribeClusterRequest(), 1, ALICE)
    assert response.error_code == DENIED
    acl(h, ALICE.principal, AclOperation.ALTER)  # ALTER implies DESCRIBE: DescribeAcls passes too
    assert h.send(DescribeClusterRequest(), 1, ALICE)[0].error_code == 0
    assert h.send(_describe_acls(h), 3, ALICE)[0].error_code == 0


def test_deny_beats_allow_and_the_wildcard_principal() -> None:
    h = authorized()
    acl(h, "User:*", AclOperation.ALL)
    acl(h, ALICE.principal, AclOperation.CLUSTER_ACTION, permission=AclPermissionType.DENY)
    assert h.send(_heartbeat(h), 1, ALICE)[0].error_code == DENIED
    assert h.send(_heartbeat(h), 1, BOB)[0].error_code == 0
    assert h.send(DescribeClusterRequest(), 1, ALICE)[0].error_code == 0  # ALTER is not denied


def test_super_users_need_no_acl_even_under_a_deny() -> None:
    h = authorized()
    acl(h, ADMIN.principal, AclOperation.ALL, permission=AclPermissionType.DENY)
    assert h.send(DescribeClusterRequest(), 1, ADMIN)[0].error_code == 0
    assert h.send(_heartbeat(h), 1, ADMIN)[0].error_code == 0
    assert h.core.take_denials() == []


def test_allow_everyone_applies_only_to_a_resource_without_acls() -> None:
    h = authorized(allow_everyone=True)
    assert h.send(_heartbeat(h), 1, ALICE)[0].error_code == 0
    acl(h, BOB.principal, AclOperation.CLUSTER_ACTION)  # the cluster now has an ACL, for bob only
    assert h.send(_heartbeat(h), 1, ALICE)[0].error_code == DENIED
    assert h.send(_heartbeat(h), 1, BOB)[0].error_code == 0
    strict = authorized(allow_everyone=False)
    assert strict.send(_heartbeat(strict), 1, ALICE)[0].error_code == DENIED


def test_api_versions_is_never_checked() -> None:
    h = authorized()
    acl(h, "User:*", AclOperation.ALL, permission=AclPermissionType.DENY)
    request = ApiVersionsRequest(client_software_name="fencer-test", client_software_version="1.0")
    response, _ = h.send(request, 3, ALICE)
    assert response.error_code == 0 and response.api_keys
    assert authorize_api(h.core.authorizer(), ALICE, ApiKey.API_VERSIONS) is None
    assert h.core.take_denials() == []


def test_without_an_authorizer_nothing_is_checked() -> None:
    h = Harness()
    h.start_brokers(1)
    response, _ = h.send(DescribeClusterRequest(), 1, ALICE)
    assert response.error_code == 0
    assert h.core.authorizer() is None and h.core.take_denials() == []
    for key in (*CLUSTER_OPERATIONS, ApiKey.CREATE_TOPICS):
        assert authorize_api(None, ALICE, key) is None


# ---------------------------------------------------------------------- the quorum's RPCs (for the shell)
@pytest.mark.parametrize(
    ("key", "operation"),
    [
        (ApiKey.VOTE, AclOperation.CLUSTER_ACTION),
        (ApiKey.BEGIN_QUORUM_EPOCH, AclOperation.CLUSTER_ACTION),
        (ApiKey.END_QUORUM_EPOCH, AclOperation.CLUSTER_ACTION),
        (ApiKey.FETCH, AclOperation.CLUSTER_ACTION),
        (ApiKey.FETCH_SNAPSHOT, AclOperation.CLUSTER_ACTION),
        (ApiKey.DESCRIBE_QUORUM, AclOperation.DESCRIBE),
    ],
)
def test_the_quorums_rpcs_need_their_operation_on_the_cluster(key: ApiKey, operation: AclOperation) -> None:
    h = authorized()
    assert authorize_api(h.core.authorizer(), ALICE, key) == DENIED
    assert authorize_api(h.core.authorizer(), ADMIN, key) is None
    acl(h, ALICE.principal, operation)
    assert authorize_api(h.core.authorizer(), ALICE, key) is None  # the replayed ACL is in force at once
    other = AclOperation.ALTER_CONFIGS  # implies neither CLUSTER_ACTION nor DESCRIBE
    acl(h, BOB.principal, other)
    assert authorize_api(h.core.authorizer(), BOB, key) == DENIED


@pytest.mark.parametrize(
    "key",
    [
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.FETCH,
        ApiKey.FETCH_SNAPSHOT,
        ApiKey.DESCRIBE_QUORUM,
    ],
)
def test_a_refused_quorum_rpc_is_answered_at_the_top_level_at_every_version(key: ApiKey) -> None:
    answer = quorum_denied(key)
    assert type(answer) is api(key).response
    assert denied_answer(key, 0, None, ALICE) == answer
    for version in served_versions(key):
        kio_cls = kio_payload_class(key, version, "response")
        if kio_cls is None:  # a version newer than kio (Vote v2): fencer's own codec only
            assert codec(type(answer), version).decode_exact(codec(type(answer), version).encode(answer)) == answer
            continue
        read = kio_decode(kio_cls, codec(type(answer), version).encode(answer))
        assert read.error_code == DENIED
        message = getattr(read, "error_message", None)
        assert message in (None, "Cluster authorization failed.")
    with pytest.raises(ValueError, match="not a quorum RPC"):
        quorum_denied(ApiKey.CREATE_TOPICS)


def test_an_api_without_a_rule_is_refused_loudly() -> None:
    with pytest.raises(ValueError, match="no authorization rule"):
        authorize_api(authorized().core.authorizer(), ALICE, ApiKey.LEADER_AND_ISR)


# ---------------------------------------------------------------------- options
def test_the_options_are_parsed_as_kafka_reads_them() -> None:
    assert authorizer_config(None) is None
    config = authorizer_config("standard", " User:admin ;User:ops;; ", True)
    assert config == AuthorizerConfig(frozenset({"User:admin", "User:ops"}), allow_everyone_if_no_acl_found=True)
    assert authorizer_config("standard") == AuthorizerConfig()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("standard", "User:admin;bob"), "super_users 'User:admin;bob'.*principalType:principalName but got bob"),
        (("acl",), "unknown authorizer 'acl'"),
        ((None, "User:admin"), "need an authorizer"),
        ((None, None, True), "need an authorizer"),
    ],
)
def test_bad_options_are_refused_with_what_is_wrong(options: tuple[Any, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        authorizer_config(*options)


# ---------------------------------------------------------------------- CreateTopics, per topic
def _create(h: Harness, context: RequestContext, *names: str, version: int = 7) -> tuple[Any, list[Data]]:
    topics = tuple(CreateTopicsRequestCreatableTopic(name=n, num_partitions=1, replication_factor=1) for n in names)
    return h.send(CreateTopicsRequest(topics=topics), version, context)


def test_create_topics_checks_each_topic_with_literal_and_prefixed_acls() -> None:
    h = authorized()
    acl(
        h,
        ALICE.principal,
        AclOperation.CREATE,
        resource_type=ResourceType.TOPIC,
        name="eu-",
        pattern=PatternType.PREFIXED,
    )
    acl(h, ALICE.principal, AclOperation.CREATE, resource_type=ResourceType.TOPIC, name="audit")
    response, records = _create(h, ALICE, "eu-orders", "audit", "us-orders", "audit-2", "eu-")
    codes = {r.name: (r.error_code, r.error_message) for r in response.topics}
    assert [r.name for r in response.topics] == ["eu-orders", "audit", "us-orders", "audit-2", "eu-"]
    assert codes["eu-orders"][0] == codes["audit"][0] == codes["eu-"][0] == 0
    assert codes["us-orders"] == codes["audit-2"] == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
    assert sorted(r.name for r in records if isinstance(r, TopicRecord)) == ["audit", "eu-", "eu-orders"]
    [denial] = h.core.take_denials()
    assert denial.api == "CreateTopics" and denial.principal == ALICE.principal
    assert denial.refused == (
        (AclOperation.CREATE, ResourceType.TOPIC, "audit-2"),
        (AclOperation.CREATE, ResourceType.TOPIC, "us-orders"),
    )


def test_create_on_the_cluster_allows_every_topic_and_a_deny_on_a_topic_still_refuses_without_it() -> None:
    h = authorized()
    acl(h, ALICE.principal, AclOperation.CREATE)
    response, records = _create(h, ALICE, "anything", "else")
    assert [r.error_code for r in response.topics] == [0, 0] and len(records) == 4
    assert h.core.take_denials() == []  # the cluster check is made without noting a refusal
    acl(h, BOB.principal, AclOperation.ALL, resource_type=ResourceType.TOPIC, name="b-", pattern=PatternType.PREFIXED)
    acl(
        h,
        BOB.principal,
        AclOperation.CREATE,
        resource_type=ResourceType.TOPIC,
        name="b-x",
        permission=AclPermissionType.DENY,
    )
    response, records = _create(h, BOB, "b-1", "b-x")
    assert [r.error_code for r in response.topics] == [0, ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    assert [r.name for r in records if isinstance(r, TopicRecord)] == ["b-1"]


def test_create_topics_refused_entirely_writes_nothing_and_a_duplicate_stays_invalid() -> None:
    h = authorized()
    log_end = h.next_offset
    response, records = _create(h, ALICE, "x", "y", "y", version=4)
    assert [r.error_code for r in response.topics] == [
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST,
    ]
    assert records == [] and h.next_offset == log_end
    [denial] = h.core.take_denials()
    assert denial.refused == ((AclOperation.CREATE, ResourceType.TOPIC, "x"),)  # duplicates are not checked


def test_topics_refused_do_not_count_towards_the_bound() -> None:
    h = authorized(max_records_per_operation=3)
    acl(h, ALICE.principal, AclOperation.CREATE, resource_type=ResourceType.TOPIC, name="ok")
    topics = (
        CreateTopicsRequestCreatableTopic(name="ok", num_partitions=2, replication_factor=1),
        CreateTopicsRequestCreatableTopic(name="big", num_partitions=50, replication_factor=1),
    )
    response, records = h.send(CreateTopicsRequest(topics=topics), 7, ALICE)
    assert [r.error_code for r in response.topics] == [0, ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    assert len(records) == 3
    acl(h, ALICE.principal, AclOperation.CREATE, resource_type=ResourceType.TOPIC, name="ok2")
    over = CreateTopicsRequestCreatableTopic(name="ok2", num_partitions=5, replication_factor=1)
    response, records = h.send(CreateTopicsRequest(topics=(over, topics[1])), 7, ALICE)
    assert [(r.error_code, r.error_message) for r in response.topics] == [
        (ErrorCode.POLICY_VIOLATION, "Excessively large number of partitions per request."),
        (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."),
    ]
    assert records == []


# ---------------------------------------------------------------------- DeleteTopics, per topic
def _deleted(records: list[Data]) -> list[uuid.UUID]:
    return [r.topic_id for r in records if isinstance(r, RemoveTopicRecord)]


def _with_topics() -> Harness:
    h = authorized()
    assert _create(h, ADMIN, "orders-eu", "orders-us", "secret")[0].topics[0].error_code == 0
    acl(
        h,
        ALICE.principal,
        AclOperation.DELETE,
        resource_type=ResourceType.TOPIC,
        name="orders-",
        pattern=PatternType.PREFIXED,
    )
    h.core.take_denials()
    return h


def test_delete_topics_by_name_does_not_reveal_what_alice_may_not_describe() -> None:
    h = _with_topics()
    orders_eu = h.topic_id("orders-eu")
    names = ("orders-eu", "secret", "ghost", "orders-ghost")
    response, records = h.send(DeleteTopicsRequest(topic_names=names), 5, ALICE)
    codes = {r.name: (r.error_code, r.error_message) for r in response.responses}
    assert codes["orders-eu"] == (0, None)
    denied = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
    assert codes["secret"] == codes["ghost"] == denied  # existing or not: the same answer
    assert codes["orders-ghost"][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # describable (DELETE implies it)
    assert _deleted(records) == [orders_eu]
    assert "orders-eu" not in h.core.state.replication.names and "secret" in h.core.state.replication.names
    [denial] = h.core.take_denials()
    assert {name for _, _, name in denial.refused} == {"secret", "ghost"}


def test_delete_topics_describable_but_not_deletable() -> None:
    h = _with_topics()
    acl(h, ALICE.principal, AclOperation.DESCRIBE, resource_type=ResourceType.TOPIC, name="secret")
    response, records = h.send(DeleteTopicsRequest(topic_names=("secret", "ghost")), 5, ALICE)
    codes = {r.name: r.error_code for r in response.responses}
    assert codes == {"secret": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "ghost": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert records == []


def test_delete_topics_by_id_names_a_refused_topic_only_if_describable() -> None:
    h = _with_topics()
    secret, orders = h.topic_id("secret"), h.topic_id("orders-us")
    unknown = uuid.UUID(int=12345)
    states = tuple(DeleteTopicsRequestDeleteTopicState(topic_id=t) for t in (secret, orders, unknown))
    response, records = h.send(DeleteTopicsRequest(topics=states), 6, ALICE)
    by_id = {r.topic_id: (r.name, r.error_code) for r in response.responses}
    assert by_id[secret] == (None, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    assert by_id[orders] == ("orders-us", 0)
    assert by_id[unknown] == (None, ErrorCode.UNKNOWN_TOPIC_ID)
    assert _deleted(records) == [orders]
    acl(h, ALICE.principal, AclOperation.DESCRIBE, resource_type=ResourceType.TOPIC, name="secret")
    response, records = h.send(DeleteTopicsRequest(topics=states[:1]), 6, ALICE)
    assert [(r.name, r.topic_id, r.error_code) for r in response.responses] == [
        ("secret", secret, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    ]
    assert records == []
    encode_response(response, 6, correlation_id=1)


def test_delete_on_the_cluster_allows_every_topic() -> None:
    h = _with_topics()
    acl(h, BOB.principal, AclOperation.DELETE)
    response, records = h.send(DeleteTopicsRequest(topic_names=("secret", "ghost")), 5, BOB)
    codes = {r.name: r.error_code for r in response.responses}
    assert codes == {"secret": 0, "ghost": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert len(_deleted(records)) == 1 and h.core.take_denials() == []
    states = (DeleteTopicsRequestDeleteTopicState(name="orders-eu", topic_id=ZERO_UUID),)
    assert h.send(DeleteTopicsRequest(topics=states), 6, BOB)[0].responses[0].error_code == 0


def test_a_duplicate_acl_in_the_log_stops_the_authorizer() -> None:
    h = authorized()
    acl(h, ALICE.principal, AclOperation.ALTER)
    acl(h, ALICE.principal, AclOperation.ALTER)  # the same ACL under another id: Kafka's AclCache refuses it
    with pytest.raises(ReplayError, match="ACL records the authorizer refuses"):
        h.core.authorizer()
