"""The ACL APIs with StandardAuthorizer configured: AclApis and AclControlManager.

CreateAcls writes one AccessControlEntryRecord per new ACL (an ACL present, or created twice in a
request, once), DescribeAcls answers what a filter matches grouped by resource, DeleteAcls removes
every ACL each filter matches; all of it through records that a fresh state replays to the same
ACLs and verdicts (a restart), the responses read back by kio.
"""

from __future__ import annotations

import random
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from controller.auth.acl import Acl, AclFilter
from controller.auth.authorizer import AuthorizerConfig
from controller.core import ControllerCore
from controller.engine import ControllerEngine
from controller.ops.authorization import RequestContext
from controller.slices import Done
from controller.state.authorization import AuthorizerState
from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.api_keys import ApiKey
from protocol.compiler import codec
from protocol.error_codes import ErrorCode
from protocol.messages.create_acls import CreateAclsRequest, CreateAclsRequestAclCreation
from protocol.messages.delete_acls import DeleteAclsRequest, DeleteAclsRequestDeleteAclsFilter
from protocol.messages.describe_acls import DescribeAclsRequest
from protocol.records.metadata import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from protocol.registry import decode_request, encode_request
from protocol.spec import Data

from ...protocol.kio_bridge import kio_decode, kio_payload_class, to_kio
from ..harness import Harness

ADMIN = RequestContext("User:admin", "10.0.0.1")
ALICE = RequestContext("User:alice", "10.0.0.2")
VERSIONS = range(4)
ANY = {"operation": AclOperation.ANY, "permission_type": AclPermissionType.ANY}


def authorized(**options: Any) -> Harness:
    return Harness(authorizer=AuthorizerConfig(frozenset({ADMIN.principal})), **options)


def creation(
    name: str,
    principal: str = "User:alice",
    operation: AclOperation = AclOperation.READ,
    *,
    resource_type: int = ResourceType.TOPIC,
    pattern: int = PatternType.LITERAL,
    permission: int = AclPermissionType.ALLOW,
    host: str = "*",
) -> CreateAclsRequestAclCreation:
    return CreateAclsRequestAclCreation(
        resource_type=resource_type,
        resource_name=name,
        resource_pattern_type=pattern,
        principal=principal,
        host=host,
        operation=operation,
        permission_type=permission,
    )


def describe(name: str | None = None, pattern: int = PatternType.ANY, **fields: Any) -> DescribeAclsRequest:
    values: dict[str, Any] = {"resource_type_filter": ResourceType.ANY, "principal_filter": None, "host_filter": None}
    values |= ANY | fields
    return DescribeAclsRequest(resource_name_filter=name, pattern_type_filter=pattern, **values)


def deletion(
    name: str | None = None, pattern: int = PatternType.ANY, **fields: Any
) -> DeleteAclsRequestDeleteAclsFilter:
    values: dict[str, Any] = {"resource_type_filter": ResourceType.ANY, "principal_filter": None, "host_filter": None}
    values |= ANY | fields
    return DeleteAclsRequestDeleteAclsFilter(resource_name_filter=name, pattern_type_filter=pattern, **values)


def kio_read(response: Data, version: int) -> Any:
    """The response's bytes as kio reads them, checked equal to fencer's message."""
    kio_cls = kio_payload_class(response.API.key, version, "response")
    assert kio_cls is not None
    read = kio_decode(kio_cls, codec(type(response), version).encode(response))
    assert read == to_kio(response, kio_cls)
    return read


def described(h: Harness, version: int = 3, **filter_fields: Any) -> list[tuple[int, str, int, str, str, int, int]]:
    """Every ACL DescribeAcls answers, flattened, as kio reads the response."""
    response, records = h.send(describe(**filter_fields), version, ADMIN)
    assert records == [] and response.error_code == 0
    read = kio_read(response, version)
    return [
        (
            r.resource_type,
            r.resource_name,
            r.pattern_type if version else 3,
            a.principal,
            a.host,
            a.operation,
            a.permission_type,
        )
        for r in read.resources
        for a in r.acls
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_create_describe_delete_round_trip_through_replayed_records(version: int) -> None:
    h = authorized()
    prefixed = PatternType.PREFIXED if version >= 1 else PatternType.LITERAL
    creations = (
        creation("orders"),
        creation("eu-", "User:bob", AclOperation.WRITE, pattern=prefixed),
        creation("orders"),  # the same ACL twice in a request: created once
        creation("kafka-cluster", "User:bob", AclOperation.ALTER, resource_type=ResourceType.CLUSTER, host="10.0.0.9"),
        creation("", "User:bob"),
        creation("orders", "bob"),
    )
    response, records = h.send(CreateAclsRequest(creations=creations), version, ADMIN)
    read = kio_read(response, version)
    assert [(r.error_code, r.error_message) for r in read.results] == [
        (0, ""),
        (0, ""),
        (0, ""),
        (0, ""),
        (ErrorCode.INVALID_REQUEST, "Invalid empty resource name"),
        (ErrorCode.INVALID_REQUEST, "expected a string in format principalType:principalName but got bob"),
    ]
    assert [type(r) for r in records] == [AccessControlEntryRecord] * 3
    assert len({r.id for r in records}) == 3
    expected = [
        (
            ResourceType.TOPIC,
            "orders",
            PatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        ),
        (ResourceType.TOPIC, "eu-", prefixed, "User:bob", "*", AclOperation.WRITE, AclPermissionType.ALLOW),
        (ResourceType.CLUSTER, "kafka-cluster", 3, "User:bob", "10.0.0.9", AclOperation.ALTER, AclPermissionType.ALLOW),
    ]
    # Kafka's order: resource type, then name descending
    assert described(h, version) == sorted(expected, key=lambda acl: (acl[0], [-ord(c) for c in acl[1]]))
    restarted = h.replayed()  # a fresh state from the log alone
    fresh = Harness(authorizer=h.authorizer)
    fresh.core = restarted
    assert described(fresh, version) == described(h, version)
    assert restarted.authorizer() is not None
    assert restarted.authorizer().authorize_cluster("User:bob", "10.0.0.9", AclOperation.ALTER)  # type: ignore[union-attr]
    assert not restarted.authorizer().authorize_cluster("User:bob", "10.0.0.8", AclOperation.ALTER)  # type: ignore[union-attr]

    response, removals = h.send(DeleteAclsRequest(filters=(deletion(principal_filter="User:bob"),)), version, ADMIN)
    read = kio_read(response, version)
    [result] = read.filter_results
    assert (result.error_code, result.error_message) == (0, None)
    assert [(m.resource_name, m.principal, m.error_code, m.error_message) for m in result.matching_acls] == [
        ("eu-", "User:bob", 0, None),
        ("kafka-cluster", "User:bob", 0, None),
    ]
    bob_ids = {r.id for r in records if r.principal == "User:bob"}
    assert [type(r) for r in removals] == [RemoveAccessControlEntryRecord] * 2
    assert {r.id for r in removals} == bob_ids
    fresh.core = h.replayed()
    assert described(fresh, version) == described(h, version) == [expected[0]]


def test_a_version_0_filter_from_the_wire_deletes_literal_acls_only_and_its_answer_encodes() -> None:
    """A v0 filter has no pattern type: Kafka reads it as LITERAL (the field's default), so a v0
    DeleteAcls never matches a PREFIXED ACL, which its v0 answer could not name."""
    h = authorized()
    prefixed = creation("eu-", "User:bob", AclOperation.WRITE, pattern=PatternType.PREFIXED)
    h.send(CreateAclsRequest(creations=(prefixed, creation("orders"))), 1, ADMIN)
    frame = encode_request(
        DeleteAclsRequest(filters=(deletion(principal_filter=None, pattern=PatternType.LITERAL),)), 0, 5
    )
    request = decode_request(frame[4:])
    assert request.body.filters[0].pattern_type_filter == PatternType.LITERAL
    response, removals = h.send(request.body, 0, ADMIN)
    [result] = kio_read(response, 0).filter_results
    assert [(m.resource_name, m.principal) for m in result.matching_acls] == [("orders", "User:alice")]
    assert len(removals) == 1
    assert [acl[1] for acl in described(h, 1)] == ["eu-"]


def test_named_filters_look_at_the_acls_of_their_name_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A DeleteAcls of 2,000 named filters against 3,000 ACLs held the daemon's event loop for
    seconds (each filter was tried on every ACL): a named filter is tried on the ACLs the indexes
    give for its name (and, for MATCH, the wildcard and the prefixes) only."""
    h = authorized()
    creations = tuple(creation(f"t{i}", "User:bob", AclOperation.ALL) for i in range(3_000))
    h.send(CreateAclsRequest(creations=(*creations, creation("eu-", pattern=PatternType.PREFIXED))), 3, ADMIN)
    tried: list[Acl] = []
    matches = AclFilter.matches
    monkeypatch.setattr(AclFilter, "matches", lambda self, acl: tried.append(acl) or matches(self, acl))
    filters = tuple(deletion(f"nomatch{i}", pattern=PatternType.LITERAL) for i in range(2_000))
    response, removals = h.send(DeleteAclsRequest(filters=filters), 3, ADMIN)
    assert [len(result.matching_acls) for result in response.filter_results] == [0] * 2_000 and not removals
    assert tried == []
    response, _ = h.send(describe("eu-west", PatternType.MATCH), 3, ADMIN)
    assert [r.resource_name for r in response.resources] == ["eu-"] and len(tried) == 1
    response, removals = h.send(DeleteAclsRequest(filters=(deletion("t7", pattern=PatternType.ANY),)), 3, ADMIN)
    assert [m.resource_name for m in response.filter_results[0].matching_acls] == ["t7"] and len(removals) == 1


def test_a_delete_of_many_filters_is_decided_a_filter_per_step(tmp_path: Path) -> None:
    """The engine paces it: the writer lets other work run between filters, however many."""
    engine = ControllerEngine.start(
        tmp_path / "data", fsync=False, now_ns=0, authorizer="standard", super_users=ADMIN.principal
    )
    try:
        engine.slice_seconds = 0.0
        filters = tuple(deletion(f"t{i}", pattern=PatternType.LITERAL) for i in range(500))
        work = engine.decide(ApiKey.DELETE_ACLS, 3, DeleteAclsRequest(filters=filters), 0, context=ADMIN)
        assert not isinstance(work, Done)
        slices = 0
        with pytest.raises(StopIteration) as stop:
            while True:
                next(work)
                slices += 1
        assert slices >= 498 and len(stop.value.value.filter_results) == 500  # the first two steps at once
    finally:
        engine.close()


def test_an_acl_already_present_is_a_success_that_writes_nothing() -> None:
    h = authorized()
    h.send(CreateAclsRequest(creations=(creation("orders"),)), 3, ADMIN)
    response, records = h.send(CreateAclsRequest(creations=(creation("orders"), creation("other"))), 3, ADMIN)
    assert [r.error_code for r in response.results] == [0, 0]
    assert [r.resource_name for r in records] == ["other"]


def test_acl_ids_come_from_the_seeded_source_and_never_repeat() -> None:
    def ids(seed: int) -> list[uuid.UUID]:
        h = Harness(authorizer=AuthorizerConfig(frozenset({ADMIN.principal})), seed=seed)
        creations = tuple(creation(f"t{i}") for i in range(20))
        return [r.id for r in h.send(CreateAclsRequest(creations=creations), 3, ADMIN)[1]]

    assert ids(1) == ids(1) != ids(2)
    assert len(set(ids(1))) == 20 and all(acl_id.version == 4 for acl_id in ids(1))


def test_a_creation_kafka_cannot_bind_fails_the_whole_request() -> None:
    h = authorized()
    creations = (creation("orders"), creation("x", operation=AclOperation.ANY))
    response, records = h.send(CreateAclsRequest(creations=creations), 3, ADMIN)
    assert [(r.error_code, r.error_message) for r in response.results] == [(ErrorCode.UNKNOWN_SERVER_ERROR, None)] * 2
    assert records == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"resource_type": ResourceType.CLUSTER}, "The only valid name for the CLUSTER resource is kafka-cluster"),
        ({"resource_type": ResourceType.UNKNOWN}, "Invalid resourceType UNKNOWN"),
        ({"pattern": PatternType.UNKNOWN}, "Invalid patternType UNKNOWN"),
        ({"operation": AclOperation.UNKNOWN}, "Invalid operation UNKNOWN"),
        ({"permission": AclPermissionType.UNKNOWN}, "Invalid permissionType UNKNOWN"),
    ],
)
def test_invalid_creations_are_refused_one_by_one_with_kafkas_message(fields: dict[str, Any], message: str) -> None:
    h = authorized()
    response, records = h.send(CreateAclsRequest(creations=(creation("orders", **fields), creation("ok"))), 3, ADMIN)
    assert [(r.error_code, r.error_message) for r in response.results] == [
        (ErrorCode.INVALID_REQUEST, message),
        (0, ""),
    ]
    assert [r.resource_name for r in records] == ["ok"]


def test_describe_acls_match_filter_groups_by_resource_pattern() -> None:
    h = authorized()
    creations = (
        creation("orders-eu"),
        creation("orders-eu", "User:bob"),
        creation("*"),
        creation("orders-", pattern=PatternType.PREFIXED),
        creation("orders-us"),
    )
    h.send(CreateAclsRequest(creations=creations), 3, ADMIN)
    response, _ = h.send(describe("orders-eu", PatternType.MATCH), 3, ADMIN)
    kio_read(response, 3)
    groups = [(r.resource_name, r.pattern_type, [a.principal for a in r.acls]) for r in response.resources]
    assert groups == [
        ("orders-eu", PatternType.LITERAL, ["User:alice", "User:bob"]),
        ("orders-", PatternType.PREFIXED, ["User:alice"]),
        ("*", PatternType.LITERAL, ["User:alice"]),
    ]
    response, _ = h.send(describe(resource_type_filter=ResourceType.UNKNOWN), 3, ADMIN)
    assert response.error_code == 0 and response.resources == ()  # Kafka refuses it while parsing


def test_delete_acls_filters_each_list_their_matches_and_remove_once() -> None:
    h = authorized()
    h.send(CreateAclsRequest(creations=(creation("orders"), creation("orders", "User:bob"))), 3, ADMIN)
    filters = (
        deletion("orders", principal_filter="User:bob"),
        deletion(pattern=PatternType.UNKNOWN),
        deletion(operation=AclOperation.UNKNOWN, permission_type=AclPermissionType.ANY),
        deletion("orders"),
        deletion("nothing"),
    )
    response, records = h.send(DeleteAclsRequest(filters=filters), 2, ADMIN)
    kio_read(response, 2)
    answers = [(r.error_code, r.error_message, [m.principal for m in r.matching_acls]) for r in response.filter_results]
    assert answers == [
        (0, None, ["User:bob"]),
        (ErrorCode.INVALID_REQUEST, "Unknown patternFilter.", []),
        (ErrorCode.INVALID_REQUEST, "Unknown entryFilter.", []),
        (0, None, ["User:alice", "User:bob"]),
        (0, None, []),
    ]
    assert len(records) == 2 and len({r.id for r in records}) == 2
    assert described(h) == []


def test_the_bound_refuses_creations_and_a_filter_past_it() -> None:
    h = authorized(max_records_per_operation=2)
    response, records = h.send(CreateAclsRequest(creations=tuple(creation(f"t{i}") for i in range(3))), 3, ADMIN)
    assert {(r.error_code, r.error_message) for r in response.results} == {
        (ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
    }
    assert records == []
    h.send(CreateAclsRequest(creations=(creation("a"), creation("b"))), 3, ADMIN)
    h.send(CreateAclsRequest(creations=(creation("c"),)), 3, ADMIN)
    filters = (deletion("a"), deletion("b"), deletion("c"), deletion("a"))
    response, records = h.send(DeleteAclsRequest(filters=filters), 3, ADMIN)
    assert [(r.error_code, r.error_message, len(r.matching_acls)) for r in response.filter_results] == [
        (0, None, 1),
        (0, None, 1),
        (ErrorCode.UNKNOWN_SERVER_ERROR, None, 0),
        (0, None, 1),  # already removed by the first: listed, not removed twice
    ]
    assert len(records) == 2
    assert [r[1] for r in described(h)] == ["c"]


def test_acls_created_take_effect_at_the_next_request_and_deleted_ones_stop() -> None:
    h = authorized()
    grant = creation("kafka-cluster", ALICE.principal, AclOperation.CLUSTER_ACTION, resource_type=ResourceType.CLUSTER)
    assert h.send(h.registration(1), 3, ALICE)[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    h.send(CreateAclsRequest(creations=(grant,)), 3, ADMIN)
    assert h.send(h.registration(1), 3, ALICE)[0].error_code == 0
    h.send(DeleteAclsRequest(filters=(deletion(principal_filter=ALICE.principal),)), 3, ADMIN)
    assert h.send(h.registration(1, 1), 3, ALICE)[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_the_acls_survive_a_snapshot() -> None:
    h = authorized()
    h.send(CreateAclsRequest(creations=(creation("a"), creation("b-", pattern=PatternType.PREFIXED))), 3, ADMIN)
    fresh = ControllerCore(h.core.config, random.Random(0))
    for offset, (record, _) in enumerate(h.core.snapshot_records()):
        fresh.replay(record, offset)
    restored, kept = fresh.authorizer(), h.core.authorizer()
    assert restored is not None and kept is not None
    assert dict(restored.acls.by_id) == dict(kept.acls.by_id) and len(restored.acls) == 2
    assert restored.authorize("User:alice", "h", AclOperation.READ, ResourceType.TOPIC, "b-1")


def test_one_replay_stays_cheap_with_ten_thousand_acls() -> None:
    """The snapshot is replaced, not rebuilt: with 10,000 ACLs, a replayed record and the read that
    applies it cost a batch's copy (~1 ms here), far below a rebuild (tens of ms)."""
    state = AuthorizerState(AuthorizerConfig())
    records = [
        AccessControlEntryRecord(
            id=uuid.UUID(int=i + 1),
            resource_type=ResourceType.TOPIC,
            resource_name=f"topic-{i}",
            pattern_type=PatternType.PREFIXED if i % 3 == 0 else PatternType.LITERAL,
            principal=f"User:u{i % 50}",
            host="*",
            operation=AclOperation.READ,
            permission_type=AclPermissionType.ALLOW,
        )
        for i in range(10_000)
    ]
    started = time.perf_counter()
    for record in records:
        state.replay(record)
    replay_all = time.perf_counter() - started
    started = time.perf_counter()
    built = state.current()
    build = time.perf_counter() - started
    assert len(built.acls) == 10_000 and replay_all < build
    samples = []
    for i in range(20):
        extra = AccessControlEntryRecord(
            id=uuid.UUID(int=100_000 + i),
            resource_type=ResourceType.GROUP,
            resource_name=f"g{i}",
            principal="User:x",
            host="*",
            operation=AclOperation.READ,
            permission_type=AclPermissionType.ALLOW,
        )
        started = time.perf_counter()
        state.replay(extra)
        current = state.current()
        samples.append(time.perf_counter() - started)
        assert current.authorize("User:x", "h", AclOperation.READ, ResourceType.GROUP, f"g{i}")
    assert sorted(samples)[len(samples) // 2] < build / 3  # the median step: a copy, not a rebuild
    assert state.current() is state.current()  # nothing pending: nothing done
    assert built.acls.by_id[uuid.UUID(int=1)] == Acl(
        ResourceType.TOPIC, "topic-0", PatternType.PREFIXED, "User:u0", "*", AclOperation.READ, AclPermissionType.ALLOW
    )


def test_without_an_authorizer_an_acl_api_answer_is_unchanged() -> None:
    h = Harness()
    response, records = h.send(CreateAclsRequest(creations=(creation("orders"),)), 3, ALICE)
    assert response.results[0].error_code == ErrorCode.SECURITY_DISABLED and records == []
    assert h.core.state.authorization is None
