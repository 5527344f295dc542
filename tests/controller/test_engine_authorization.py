"""The engine's authorization options and seam, on a real data dir.

`load`/`start` take the options (checked), `decide` takes who asks, `authorizer` is the one in
force on an active controller and a standby alike (its ACL snapshot follows what was replayed:
the log, a snapshot), `take_denials` hands over what was refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.auth.authorizer import AuthorizerConfig
from controller.engine import ControllerEngine
from controller.ops.authorization import RequestContext, authorize_api
from controller.slices import finish
from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.create_acls import CreateAclsRequest, CreateAclsRequestAclCreation
from protocol.messages.describe_cluster import DescribeClusterRequest

ADMIN = RequestContext("User:admin", "10.1.1.1")
OPS = RequestContext("User:ops", "10.1.1.2")
ALICE = RequestContext("User:alice", "10.1.1.3")
OPTIONS = {"authorizer": "standard", "super_users": " User:admin ; User:root "}


def start(data_dir: Path, **options: object) -> ControllerEngine:
    return ControllerEngine.start(data_dir, fsync=False, now_ns=0, **options)  # type: ignore[arg-type]


def grant_ops(engine: ControllerEngine) -> None:
    """ALTER on the cluster for User:ops, created by the super user and committed."""
    grant = CreateAclsRequestAclCreation(
        resource_type=ResourceType.CLUSTER,
        resource_name="kafka-cluster",
        resource_pattern_type=PatternType.LITERAL,
        principal=OPS.principal,
        host="*",
        operation=AclOperation.ALTER,
        permission_type=AclPermissionType.ALLOW,
    )
    response = finish(engine.decide(ApiKey.CREATE_ACLS, 3, CreateAclsRequest(creations=(grant,)), 0, ADMIN))
    assert response.results[0].error_code == 0  # type: ignore[union-attr]
    engine.commit_now()


def describe_cluster(engine: ControllerEngine, context: RequestContext | None = None) -> int:
    if context is None:
        response = finish(engine.decide(ApiKey.DESCRIBE_CLUSTER, 1, DescribeClusterRequest(), 0))
    else:
        response = finish(engine.decide(ApiKey.DESCRIBE_CLUSTER, 1, DescribeClusterRequest(), 0, context))
    return response.error_code  # type: ignore[union-attr,no-any-return]


def test_the_options_configure_standard_authorizer(tmp_path: Path) -> None:
    engine = start(tmp_path, allow_everyone_if_no_acl_found=True, **OPTIONS)
    assert engine.config.authorizer == AuthorizerConfig(
        frozenset({"User:admin", "User:root"}), allow_everyone_if_no_acl_found=True
    )
    assert engine.authorizer is not None and engine.authorizer.config == engine.config.authorizer
    engine.close()


def test_by_default_there_is_no_authorizer_and_nothing_is_checked(tmp_path: Path) -> None:
    engine = start(tmp_path)
    assert engine.config.authorizer is None and engine.authorizer is None
    assert describe_cluster(engine, ALICE) == 0 and describe_cluster(engine) == 0
    assert engine.take_denials() == []
    engine.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"authorizer": "standard", "super_users": "User:admin;admin"}, "but got admin"),
        ({"authorizer": "AclAuthorizer"}, "unknown authorizer"),
        ({"super_users": "User:admin"}, "need an authorizer"),
    ],
)
def test_bad_options_stop_loading(tmp_path: Path, options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        start(tmp_path, **options)


def test_decide_takes_who_asks_and_denials_are_handed_over(tmp_path: Path) -> None:
    engine = start(tmp_path, **OPTIONS)
    assert describe_cluster(engine) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED  # anonymous by default
    assert describe_cluster(engine, ALICE) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert describe_cluster(engine, ADMIN) == 0
    denials = engine.take_denials()
    assert [(d.api, d.principal, d.host) for d in denials] == [
        ("DescribeCluster", "User:ANONYMOUS", ""),
        ("DescribeCluster", ALICE.principal, ALICE.host),
    ]
    assert engine.take_denials() == []
    assert engine.settled  # nothing was staged for the refusals
    engine.close()


@pytest.mark.parametrize("through_snapshot", [False, True])
def test_acls_come_back_after_a_restart_and_on_a_standby(tmp_path: Path, through_snapshot: bool) -> None:
    engine = start(tmp_path, **OPTIONS)
    assert describe_cluster(engine, OPS) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    grant_ops(engine)
    assert describe_cluster(engine, OPS) == 0
    if through_snapshot:
        engine.snapshot_now()
    engine.close()

    restarted = start(tmp_path, **OPTIONS)
    assert restarted.startup.snapshot is not None if through_snapshot else restarted.startup.snapshot is None
    assert describe_cluster(restarted, OPS) == 0
    restarted.close()

    standby = ControllerEngine.load(tmp_path, fsync=False, **OPTIONS)  # type: ignore[arg-type]
    finish(standby.catch_up(standby.log.next_offset))
    assert authorize_api(standby.authorizer, OPS, ApiKey.ELECT_LEADERS) is None
    assert authorize_api(standby.authorizer, OPS, ApiKey.VOTE) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert authorize_api(standby.authorizer, ADMIN, ApiKey.VOTE) is None
    standby.close()

    without = start(tmp_path)  # the same log without an authorizer: the ACLs are kept, nothing checked
    assert without.authorizer is None and len(without.core.state.kept.acls) == 1
    assert describe_cluster(without, ALICE) == 0
    without.close()
