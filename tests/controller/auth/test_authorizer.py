"""StandardAuthorizer's decisions (controller/auth/authorizer.py): Kafka's StandardAuthorizerTest cases,
the config parsing, the snapshot's replay, and the index against a full scan (Hypothesis)."""

from __future__ import annotations

import dataclasses
import time
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.auth.acl import Acl, AclFilter, acl_to_record
from controller.auth.authorizer import (
    AclReplayError,
    AclSnapshot,
    Authorizer,
    AuthorizerConfig,
    acl_applies,
    parse_allow_everyone,
    parse_super_users,
)
from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.records.metadata import RemoveAccessControlEntryRecord

ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = (
    AclOperation.ALL,
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DELETE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
)
DESCRIBE_CONFIGS, ALTER_CONFIGS = AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
HOST = "127.0.0.1"


def acl(
    kind: ResourceType,
    name: str,
    pattern: PatternType,
    principal: str,
    host: str,
    op: AclOperation,
    perm: AclPermissionType,
) -> Acl:
    return Acl(kind, name, pattern, principal, host, op, perm)


def authorizer(*acls: Acl, super_users: str = "User:superman", allow_if_none: str | None = None) -> Authorizer:
    snapshot = AclSnapshot.of({uuid.UUID(int=index + 1): each for index, each in enumerate(acls)})
    return Authorizer(AuthorizerConfig.from_properties(super_users, allow_if_none), snapshot)


def decide(
    auth: Authorizer, user: str, *actions: tuple[AclOperation, ResourceType, str], host: str = HOST
) -> list[bool]:
    return [auth.authorize(f"User:{user}", host, op, kind, name) for op, kind, name in actions]


def foo_acl(op: AclOperation, perm: AclPermissionType) -> Acl:
    return acl(TOPIC, "foo_", PREFIXED, "User:bob", "*", op, perm)


def bar_acl(op: AclOperation, perm: AclPermissionType) -> Acl:
    return acl(GROUP, "bar", LITERAL, "User:*", "*", op, perm)


def test_super_users_config() -> None:
    assert parse_super_users(None) == frozenset()
    assert parse_super_users("User:bob;User:alice ") == {"User:bob", "User:alice"}
    assert parse_super_users(";  User:bob  ;  User:alice ") == {"User:bob", "User:alice"}
    assert parse_super_users("User:a\t;\nUser:b;;") == {"User:a", "User:b"}
    with pytest.raises(ValueError, match=r"^expected a string in format principalType:principalName but got bob$"):
        parse_super_users("bob;:alice")


def test_allow_everyone_config() -> None:
    assert not parse_allow_everyone(None)
    assert parse_allow_everyone("true") and parse_allow_everyone(" TRUE ")
    assert not parse_allow_everyone("false") and not parse_allow_everyone("yes")


@pytest.mark.parametrize("op", [DESCRIBE, READ, WRITE, DELETE, ALTER])
def test_operations_that_imply_describe(op: AclOperation) -> None:
    assert acl_applies(foo_acl(op, ALLOW), "User:bob", HOST, DESCRIBE)
    assert acl_applies(foo_acl(op, DENY), "User:bob", HOST, DESCRIBE) == (op == DESCRIBE)


def test_implication_is_only_for_allow_and_only_to_describe() -> None:
    assert not acl_applies(foo_acl(CREATE, ALLOW), "User:bob", HOST, DESCRIBE)
    for op in (DESCRIBE_CONFIGS, ALTER_CONFIGS):
        assert acl_applies(foo_acl(op, ALLOW), "User:bob", HOST, DESCRIBE_CONFIGS)
    assert not acl_applies(foo_acl(ALTER_CONFIGS, DENY), "User:bob", HOST, DESCRIBE_CONFIGS)
    assert acl_applies(foo_acl(ALTER_CONFIGS, DENY), "User:bob", HOST, ALTER_CONFIGS)
    assert not acl_applies(foo_acl(READ, ALLOW), "User:bob", HOST, WRITE)
    assert acl_applies(foo_acl(ALL, DENY), "User:bob", HOST, WRITE)


def test_principal_matching() -> None:
    assert acl_applies(foo_acl(READ, ALLOW), "User:bob", HOST, READ)
    assert not acl_applies(foo_acl(READ, ALLOW), "User:alice", HOST, READ)
    assert acl_applies(bar_acl(READ, DENY), "User:alice", HOST, READ)
    assert acl_applies(bar_acl(READ, DENY), "Group:ops", HOST, READ)  # User:* whatever the type
    no_colon = acl(TOPIC, "t", LITERAL, "bob", "*", READ, ALLOW)
    assert not acl_applies(no_colon, "User:bob", HOST, READ)


def test_simple_authorizations_and_listing() -> None:
    auth = authorizer(
        foo_acl(READ, ALLOW), foo_acl(WRITE, ALLOW), bar_acl(DESCRIBE_CONFIGS, ALLOW), bar_acl(ALTER_CONFIGS, ALLOW)
    )
    assert decide(auth, "bob", (READ, TOPIC, "foo_")) == [True]
    assert decide(auth, "fred", (ALTER_CONFIGS, GROUP, "bar")) == [True]
    listed = [each for _, each in auth.acls.acls(AclFilter())]
    assert listed == [
        foo_acl(READ, ALLOW),
        foo_acl(WRITE, ALLOW),
        bar_acl(DESCRIBE_CONFIGS, ALLOW),
        bar_acl(ALTER_CONFIGS, ALLOW),
    ]
    assert [each for _, each in auth.acls.acls(AclFilter(resource_type=TOPIC))] == listed[:2]


def test_deny_precedence_with_operation_all() -> None:
    auth = authorizer(
        acl(TOPIC, "foo", LITERAL, "User:alice", "*", ALL, DENY),
        acl(TOPIC, "foo", PREFIXED, "User:alice", "*", READ, ALLOW),
        acl(TOPIC, "foo", LITERAL, "User:*", "*", ALL, DENY),
        acl(TOPIC, "foo", PREFIXED, "User:*", "*", DESCRIBE, ALLOW),
    )
    alice = [(WRITE, TOPIC, "foo"), (READ, TOPIC, "foo"), (DESCRIBE, TOPIC, "foo"), (READ, TOPIC, "foobar")]
    assert decide(auth, "alice", *alice) == [False, False, False, True]
    bob = [(DESCRIBE, TOPIC, "foo"), (READ, TOPIC, "foo"), (WRITE, TOPIC, "foo"), (DESCRIBE, TOPIC, "foobaz")]
    assert decide(auth, "bob", *bob, (READ, TOPIC, "foobaz")) == [False, False, False, True, False]


def test_topic_acl_with_operation_all() -> None:
    auth = authorizer(
        acl(TOPIC, "foo", LITERAL, "User:*", "*", ALL, ALLOW),
        acl(TOPIC, "bar", PREFIXED, "User:alice", "*", ALL, ALLOW),
        acl(TOPIC, "baz", LITERAL, "User:bob", "*", ALL, ALLOW),
    )
    assert decide(auth, "alice", (WRITE, TOPIC, "foo"), (DESCRIBE_CONFIGS, TOPIC, "bar"), (DESCRIBE, TOPIC, "baz")) == [
        True,
        True,
        False,
    ]
    assert decide(auth, "bob", (WRITE, TOPIC, "foo"), (READ, TOPIC, "bar"), (DESCRIBE, TOPIC, "baz")) == [
        True,
        False,
        True,
    ]
    assert decide(auth, "malory", (DESCRIBE, TOPIC, "foo"), (WRITE, TOPIC, "bar"), (READ, TOPIC, "baz")) == [
        True,
        False,
        False,
    ]


def test_host_addresses() -> None:
    host1, host2, local = "192.168.1.1", "192.168.1.2", "10.0.0.7"
    auth = authorizer(
        acl(TOPIC, "foo", LITERAL, "User:alice", host1, READ, DENY),
        acl(TOPIC, "foo", LITERAL, "User:alice", "*", READ, ALLOW),
        acl(TOPIC, "bar", LITERAL, "User:bob", host2, READ, ALLOW),
        acl(TOPIC, "bar", LITERAL, "User:*", local, DESCRIBE, ALLOW),
    )
    actions = [(READ, TOPIC, "foo"), (READ, TOPIC, "bar"), (DESCRIBE, TOPIC, "bar")]
    assert decide(auth, "alice", *actions, host=local) == [True, False, True]
    assert decide(auth, "alice", *actions, host=host1) == [False, False, False]
    assert decide(auth, "alice", *actions, host=host2) == [True, False, False]
    assert decide(auth, "bob", *actions, host=local) == [False, False, True]
    assert decide(auth, "bob", *actions, host=host1) == [False, False, False]
    assert decide(auth, "bob", *actions, host=host2) == [False, True, True]


def test_many_acls_and_the_wildcard_resource() -> None:
    auth = authorizer(
        acl(TOPIC, "green2", LITERAL, "User:*", "*", READ, ALLOW),
        acl(TOPIC, "green", PREFIXED, "User:bob", "*", READ, ALLOW),
        acl(TOPIC, "betamax4", LITERAL, "User:bob", "*", READ, ALLOW),
        acl(TOPIC, "betamax", LITERAL, "User:bob", "*", READ, ALLOW),
        acl(TOPIC, "beta", PREFIXED, "User:*", "*", READ, ALLOW),
        acl(TOPIC, "alpha", PREFIXED, "User:*", "*", READ, ALLOW),
        acl(TOPIC, "alp", PREFIXED, "User:bob", "*", READ, DENY),
        acl(GROUP, "*", LITERAL, "User:bob", "*", WRITE, ALLOW),
        acl(GROUP, "wheel", LITERAL, "User:*", "*", WRITE, DENY),
    )
    assert decide(auth, "bob", (READ, TOPIC, "green1"), (WRITE, GROUP, "wheel")) == [True, False]
    assert decide(auth, "bob", (READ, TOPIC, "alpha"), (WRITE, GROUP, "arbitrary"), (READ, TOPIC, "ala")) == [
        False,
        True,
        False,
    ]
    verdict = auth.verdict("User:bob", HOST, READ, TOPIC, "alpha")
    assert verdict.rule == "MatchingAcl" and verdict.acl == acl(TOPIC, "alp", PREFIXED, "User:bob", "*", READ, DENY)


def test_prefix_acls() -> None:
    auth = authorizer(
        acl(TOPIC, "fooa", PREFIXED, "User:alice", "*", ALL, ALLOW),
        acl(TOPIC, "foobar", LITERAL, "User:bob", "*", ALL, ALLOW),
        acl(TOPIC, "f", PREFIXED, "User:bob", "*", ALL, ALLOW),
    )
    assert decide(auth, "bob", (WRITE, TOPIC, "foobarr"), (READ, TOPIC, "goobar"), (READ, TOPIC, "fooa")) == [
        True,
        False,
        True,
    ]
    assert decide(auth, "alice", (DESCRIBE, TOPIC, "fooa"), (WRITE, TOPIC, "bar"), (READ, TOPIC, "baz")) == [
        True,
        False,
        False,
    ]


@pytest.mark.parametrize(("allow_if_none", "topic2"), [("true", True), ("false", False), (None, False)])
def test_allow_everyone_if_no_acl_found_means_no_acl_on_the_resource_at_all(
    allow_if_none: str | None, topic2: bool
) -> None:
    auth = authorizer(
        acl(TOPIC, "topic1", LITERAL, "User:Alice", "*", READ, ALLOW),
        super_users="User:alice;User:chris",
        allow_if_none=allow_if_none,
    )
    assert decide(auth, "Bob", (READ, TOPIC, "topic1"), (READ, TOPIC, "topic2")) == [False, topic2]
    assert auth.verdict("User:Bob", HOST, READ, TOPIC, "topic1").rule == "NoMatchingAllow"
    assert auth.verdict("User:Bob", HOST, READ, TOPIC, "topic2").rule == ("DefaultAllow" if topic2 else "DefaultDeny")


def test_super_users_are_allowed_everything_whatever_the_acls() -> None:
    auth = authorizer(acl(TOPIC, "*", LITERAL, "User:*", "*", ALL, DENY), super_users=" User:superman ; User:root")
    assert decide(auth, "superman", (WRITE, TOPIC, "x"), (ALTER, CLUSTER, "kafka-cluster")) == [True, True]
    assert decide(auth, "alice", (WRITE, TOPIC, "x")) == [False]
    assert auth.verdict("User:root", HOST, READ, TOPIC, "x").rule == "SuperUser"


def test_cluster_and_topic_creation_helpers() -> None:
    ops = authorizer(acl(CLUSTER, "kafka-cluster", LITERAL, "User:ops", "*", CREATE, ALLOW))
    assert ops.authorize_cluster("User:ops", HOST, CREATE)
    assert ops.creatable_topics("User:ops", HOST, ["a", "b", "a"]) == {"a", "b"}
    dev = authorizer(acl(TOPIC, "dev-", PREFIXED, "User:dev", "*", CREATE, ALLOW))
    assert not dev.authorize_cluster("User:dev", HOST, CREATE)
    assert dev.creatable_topics("User:dev", HOST, ["dev-1", "prod-1"]) == {"dev-1"}
    assert dev.authorized_names("User:dev", HOST, DESCRIBE, TOPIC, ["dev-1"]) == set()


def test_replay_adds_and_removes_and_leaves_the_old_snapshot_alone() -> None:
    first, second = foo_acl(READ, ALLOW), bar_acl(WRITE, DENY)
    ids = [uuid.UUID(int=7), uuid.UUID(int=8)]
    empty = AclSnapshot()
    both = empty.replay([acl_to_record(ids[0], first), acl_to_record(ids[1], second)])
    one = both.replay([RemoveAccessControlEntryRecord(id=ids[0])])
    assert (len(empty), len(both), len(one)) == (0, 2, 1)
    assert dict(one.by_id) == {ids[1]: second}
    assert list(both.matching(TOPIC, "foo_x")) == [first] and list(one.matching(TOPIC, "foo_x")) == []
    auth = Authorizer(AuthorizerConfig(), both)
    assert auth.authorize("User:bob", HOST, READ, TOPIC, "foo_x")
    assert not dataclasses.replace(auth, acls=one).authorize("User:bob", HOST, READ, TOPIC, "foo_x")


def test_replay_refuses_what_kafkas_acl_cache_refuses() -> None:
    one = AclSnapshot().replay([acl_to_record(uuid.UUID(int=1), foo_acl(READ, ALLOW))])
    with pytest.raises(AclReplayError, match="already exists"):
        one.replay([acl_to_record(uuid.UUID(int=1), bar_acl(READ, ALLOW))])
    with pytest.raises(AclReplayError, match="to aclsByResource"):
        one.replay([acl_to_record(uuid.UUID(int=2), foo_acl(READ, ALLOW))])
    with pytest.raises(AclReplayError, match="not found in aclsById"):
        one.replay([RemoveAccessControlEntryRecord(id=uuid.UUID(int=3))])
    assert len(one) == 1


NAMES = st.sampled_from(["", "*", "f", "fo", "foo", "foo_", "foo_bar", "bar", "é", "😀x"])
ACLS = st.builds(
    Acl,
    st.sampled_from([TOPIC, GROUP]),
    NAMES,
    st.sampled_from([LITERAL, PREFIXED]),
    st.sampled_from(["User:bob", "User:alice", "User:*", "Group:bob"]),
    st.sampled_from(["*", "10.0.0.1", "10.0.0.2"]),
    st.sampled_from(list(AclOperation)[2:]),
    st.sampled_from([ALLOW, DENY]),
)


def scan(
    acls: list[Acl], allow_if_none: bool, principal: str, host: str, op: AclOperation, kind: ResourceType, name: str
) -> bool:
    """The rules read literally, over every ACL: the reference for the index."""
    on_resource = [
        each
        for each in acls
        if each.resource_type == kind
        and (
            (each.pattern_type == LITERAL and each.resource_name in (name, "*"))
            or (each.pattern_type == PREFIXED and name.startswith(each.resource_name))
        )
    ]
    applying = [each for each in on_resource if acl_applies(each, principal, host, op)]
    if any(each.permission == DENY for each in applying):
        return False
    return bool(applying) or (not on_resource and allow_if_none)


@given(
    st.lists(ACLS, unique=True, max_size=25),
    st.booleans(),
    st.lists(
        st.tuples(
            st.sampled_from(["User:bob", "User:alice", "User:eve"]),
            st.sampled_from(["10.0.0.1", "10.0.0.3"]),
            st.sampled_from(list(AclOperation)[2:]),
            st.sampled_from([TOPIC, GROUP]),
            NAMES,
        ),
        min_size=1,
        max_size=10,
    ),
    st.data(),
)
def test_the_index_decides_as_a_full_scan(
    acls: list[Acl],
    allow_if_none: bool,
    asks: list[tuple[str, str, AclOperation, ResourceType, str]],
    data: st.DataObject,
) -> None:
    removed = data.draw(st.sets(st.sampled_from(range(len(acls))) if acls else st.nothing()))
    ids = [uuid.UUID(int=index + 1) for index in range(len(acls))]
    snapshot = AclSnapshot().replay(acl_to_record(acl_id, each) for acl_id, each in zip(ids, acls, strict=True))
    snapshot = snapshot.replay(RemoveAccessControlEntryRecord(id=ids[index]) for index in sorted(removed))
    kept = [each for index, each in enumerate(acls) if index not in removed]
    auth = Authorizer(AuthorizerConfig(allow_everyone_if_no_acl_found=allow_if_none), snapshot)
    for principal, host, op, kind, name in asks:
        assert auth.authorize(principal, host, op, kind, name) == scan(
            kept, allow_if_none, principal, host, op, kind, name
        )


def test_thousands_of_acls_stay_fast() -> None:
    acls = {
        uuid.UUID(int=index + 1): acl(
            TOPIC, f"team{index % 500}-svc{index}", [LITERAL, PREFIXED][index % 2], f"User:u{index}", "*", READ, ALLOW
        )
        for index in range(10_000)
    }
    started = time.perf_counter()
    snapshot = AclSnapshot.of(acls)
    built = time.perf_counter() - started
    auth = Authorizer(AuthorizerConfig(), snapshot)
    started = time.perf_counter()
    for index in range(2_000):
        auth.authorize(f"User:u{index}", HOST, READ, TOPIC, f"team{index % 500}-svc{index}-partition")
    per_call = (time.perf_counter() - started) / 2_000
    # a scan of 10,000 ACLs costs milliseconds per call; the index, microseconds (generous bounds: loaded CI)
    assert built < 2.0 and per_call < 0.0005, (built, per_call)
