"""Who may call which API: Kafka's controller checks (ControllerApis, AclApis) over the authorizer.

Rules (Kafka 3.9 ControllerApis `handleX` -> `authHelper.authorizeClusterOperation`, AuthHelper):
- Every request comes with a `RequestContext`: the principal ("User:ANONYMOUS" without a client
  certificate) and the peer's host as Java prints it (`auth.authorizer.java_host_address`; ""
  when unknown: only host "*" ACLs then apply). The shell establishes both; the default context
  is what every caller that says nothing gets.
- Without an authorizer (`ControllerConfig.authorizer` None) nothing is checked: every request is
  decided as before (Kafka's `authHelper.authorize` is true for every action without one).
- With one, the cluster resource ("kafka-cluster") is checked first, per API (`CLUSTER_OPERATIONS`):
  CLUSTER_ACTION for the brokers' APIs (BrokerRegistration, BrokerHeartbeat, AlterPartition,
  ControlledShutdown, fencer's AlterReplicaState) and the quorum's RPCs (Vote, BeginQuorumEpoch,
  EndQuorumEpoch, Fetch, FetchSnapshot); ALTER for ElectLeaders, DescribeCluster (on a
  controller, unlike a broker), CreateAcls and DeleteAcls; DESCRIBE for DescribeQuorum and
  DescribeAcls. ApiVersions is never checked. CreateTopics and DeleteTopics are checked per topic
  by their operations (`ops.topics`), with `Access`.
- A denied cluster check is CLUSTER_AUTHORIZATION_FAILED (31) in the request's `getErrorResponse`
  shape (`not_controller.error_answer`, called by the core): the top-level code where the response has one, with the
  message where it carries one; ElectLeaders every requested partition (and the top level from
  v1); CreateAcls every creation; DeleteAcls every filter. Nothing is decided: no records, no
  soft state touched (a denied heartbeat does not extend the session).
- The message is fencer's (`denied_message`): Kafka's is "Request <the request channel's own
  description> is not authorized.", which names a connection id and buffers no client can use.
- Each request that was denied anything (its cluster check, or topics) is one `Denial` (the API's
  name, the principal, the host, and what was refused), for the shell's
  `fencer_authorization_denied_total{api,principal}` and its log line. Checks Kafka makes with
  `logIfDenied = false` (CREATE or DELETE on the cluster before the per-topic checks) are not
  denials when the per-topic checks allow.
- `authorize_api(authorizer, context, api_key)` is the check alone, for the shell: the quorum's
  RPCs, answered outside the core (`controller.server.raft_inbound`), call it on every node with
  `engine.authorizer`; it answers None for CreateTopics and DeleteTopics (checked per topic).
  `quorum_denied(api_key)` is then the answer, each request's getErrorResponse: the top-level
  error code alone (Vote, BeginQuorumEpoch, EndQuorumEpoch, FetchSnapshot; Fetch from v13, all
  fencer serves, with no partition and session id 0), DescribeQuorum with the error's default
  message, "Cluster authorization failed." (getTopLevelErrorResponse).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.acl_codes import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.begin_quorum_epoch import BeginQuorumEpochResponse
from protocol.messages.describe_quorum import DescribeQuorumResponse
from protocol.messages.end_quorum_epoch import EndQuorumEpochResponse
from protocol.messages.fetch import FetchResponse
from protocol.messages.fetch_snapshot import FetchSnapshotResponse
from protocol.messages.vote import VoteResponse
from protocol.registry import api
from protocol.spec import Data

from ..auth.acl import CLUSTER_NAME
from ..auth.authorizer import Authorizer, AuthorizerConfig
from ..auth.principal import ANONYMOUS

#: fencer's `--authorizer` value for Kafka's StandardAuthorizer (`authorizer.class.name`)
STANDARD = "standard"

#: the operation on the cluster resource each API needs (ControllerApis)
CLUSTER_OPERATIONS: dict[int, AclOperation] = {
    ApiKey.BROKER_REGISTRATION: AclOperation.CLUSTER_ACTION,
    ApiKey.BROKER_HEARTBEAT: AclOperation.CLUSTER_ACTION,
    ApiKey.ALTER_PARTITION: AclOperation.CLUSTER_ACTION,
    ApiKey.CONTROLLED_SHUTDOWN: AclOperation.CLUSTER_ACTION,
    ApiKey.ALTER_REPLICA_STATE: AclOperation.CLUSTER_ACTION,
    ApiKey.VOTE: AclOperation.CLUSTER_ACTION,
    ApiKey.BEGIN_QUORUM_EPOCH: AclOperation.CLUSTER_ACTION,
    ApiKey.END_QUORUM_EPOCH: AclOperation.CLUSTER_ACTION,
    ApiKey.FETCH: AclOperation.CLUSTER_ACTION,
    ApiKey.FETCH_SNAPSHOT: AclOperation.CLUSTER_ACTION,
    ApiKey.ELECT_LEADERS: AclOperation.ALTER,
    ApiKey.DESCRIBE_CLUSTER: AclOperation.ALTER,
    ApiKey.CREATE_ACLS: AclOperation.ALTER,
    ApiKey.DELETE_ACLS: AclOperation.ALTER,
    ApiKey.DESCRIBE_QUORUM: AclOperation.DESCRIBE,
    ApiKey.DESCRIBE_ACLS: AclOperation.DESCRIBE,
}
#: the quorum's RPCs: checked by the shell (`authorize_api`), refused with `quorum_denied`
QUORUM_RPCS = frozenset(
    {
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.FETCH,
        ApiKey.FETCH_SNAPSHOT,
        ApiKey.DESCRIBE_QUORUM,
    }
)
#: APIs with no cluster check: ApiVersions (never checked), the topic APIs (checked per topic)
NOT_CLUSTER_CHECKED = frozenset({ApiKey.API_VERSIONS, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS})


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Who asks: the principal ("Type:name") and the peer's host (Java's address text, "" unknown)."""

    principal: str = ANONYMOUS
    host: str = ""


DEFAULT_CONTEXT = RequestContext()


@dataclass(frozen=True, slots=True)
class Denial:
    """A request the authorizer refused something: the API's name ("CreateTopics"), who asked, and
    what was refused ((operation, resource type, resource name) each)."""

    api: str
    principal: str
    host: str
    refused: tuple[tuple[AclOperation, ResourceType, str], ...]


def authorizer_config(
    authorizer: str | None, super_users: str | None = None, allow_everyone_if_no_acl_found: bool = False
) -> AuthorizerConfig | None:
    """The authorization options, checked: `authorizer` None (no authorizer) or "standard";
    `super_users` Kafka's `super.users` text (';'-separated principals, trimmed). ValueError names
    what is wrong; options given without an authorizer are refused (they would do nothing)."""
    if authorizer is None:
        if super_users is not None or allow_everyone_if_no_acl_found:
            raise ValueError(
                "super_users and allow_everyone_if_no_acl_found need an authorizer (--authorizer standard)"
            )
        return None
    if authorizer != STANDARD:
        raise ValueError(f"unknown authorizer {authorizer!r}: the one authorizer is {STANDARD!r} (StandardAuthorizer)")
    try:
        return AuthorizerConfig.from_properties(super_users, "true" if allow_everyone_if_no_acl_found else "false")
    except ValueError as exc:
        raise ValueError(f"super_users {super_users!r}: an entry is not a principal: {exc}") from exc


def authorize_api(authorizer: Authorizer | None, context: RequestContext, api_key: int) -> ErrorCode | None:
    """CLUSTER_AUTHORIZATION_FAILED if `context` may not call `api_key` on the cluster, else None
    (always None without an authorizer, for ApiVersions and for the per-topic APIs)."""
    if authorizer is None or api_key in NOT_CLUSTER_CHECKED:
        return None
    operation = CLUSTER_OPERATIONS.get(api_key)
    if operation is None:
        raise ValueError(f"api key {api_key} has no authorization rule")
    if authorizer.authorize_cluster(context.principal, context.host, operation):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def quorum_denied(api_key: int) -> Data:
    """The answer to a quorum RPC `authorize_api` refused (see the module's rules)."""
    denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    if api_key == ApiKey.VOTE:
        return VoteResponse(error_code=denied, topics=())
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        return BeginQuorumEpochResponse(error_code=denied, topics=())
    if api_key == ApiKey.END_QUORUM_EPOCH:
        return EndQuorumEpochResponse(error_code=denied, topics=())
    if api_key == ApiKey.FETCH_SNAPSHOT:
        return FetchSnapshotResponse(error_code=denied, topics=())
    if api_key == ApiKey.FETCH:
        return FetchResponse(error_code=denied, session_id=0, responses=())
    if api_key == ApiKey.DESCRIBE_QUORUM:
        return DescribeQuorumResponse(error_code=denied, error_message="Cluster authorization failed.", topics=())
    raise ValueError(f"api key {api_key} is not a quorum RPC")


def denied_message(api_key: int, context: RequestContext, operation: AclOperation) -> str:
    return (
        f"Request {api(api_key).name} is not authorized: principal {context.principal} "
        f"may not {operation.name} on the cluster."
    )


@dataclass
class Access:
    """One request's checks: what `context` may do under `authorizer` (everything without one),
    noting each refusal (Kafka's AuthHelper for one request)."""

    authorizer: Authorizer | None
    context: RequestContext = DEFAULT_CONTEXT
    refused: list[tuple[AclOperation, ResourceType, str]] = field(default_factory=list)

    def cluster(self, operation: AclOperation, *, noted: bool = True) -> bool:
        """`operation` on the cluster; a refusal noted unless `noted` is false (Kafka's logIfDenied)."""
        if self.authorizer is None:
            return True
        if self.authorizer.authorize_cluster(self.context.principal, self.context.host, operation):
            return True
        if noted:
            self.refused.append((operation, ResourceType.CLUSTER, CLUSTER_NAME))
        return False

    def names(self, operation: AclOperation, resource_type: ResourceType, names: set[str]) -> set[str]:
        """The names on which `operation` is allowed (filterByAuthorized); each other one noted."""
        if self.authorizer is None:
            return set(names)
        allowed = self.authorizer.authorized_names(
            self.context.principal, self.context.host, operation, resource_type, names
        )
        self.refused.extend((operation, resource_type, name) for name in sorted(names - allowed))
        return allowed

    def denial(self, api_key: int) -> Denial | None:
        """The request's `Denial`, if anything was refused."""
        if not self.refused:
            return None
        context = self.context
        return Denial(api(api_key).name, context.principal, context.host, tuple(self.refused))


#: the access of every caller when no authorizer is configured
UNCHECKED = Access(None)
