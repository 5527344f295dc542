"""Which of the codec's APIs the controller uses, and how: those it serves on its listener (and
at which versions), those it sends to brokers, and those it does neither with.

These are the controller's choices: the codec (`protocol.registry`) decodes every API it knows at
every version it knows, since a capture of a real cluster may hold any of them.

Rules:
- Every api key of the codec is in exactly one of `INBOUND_API_KEYS`, `OUTBOUND_API_KEYS` and
  `DECODE_ONLY_API_KEYS`.
- The daemon's listener decodes only `INBOUND_API_KEYS` (`controller.server.request_checks`'s
  `decode_served`): any other key is refused as an unknown api, and a version outside
  `SERVED_VERSIONS` of a key listed there as an unsupported version. ApiVersions lists the same
  keys at the same versions (`served_versions`, `controller.ops.cluster_info`).
"""

from __future__ import annotations

from protocol.api_keys import ApiKey
from protocol.registry import api
from protocol.versions import Versions

#: APIs the controller serves on its listener.
INBOUND_API_KEYS = frozenset(
    {
        ApiKey.CONTROLLED_SHUTDOWN,
        ApiKey.API_VERSIONS,
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_TOPICS,
        ApiKey.ELECT_LEADERS,
        ApiKey.ALTER_PARTITION,
        ApiKey.DESCRIBE_CLUSTER,
        ApiKey.BROKER_REGISTRATION,
        ApiKey.BROKER_HEARTBEAT,
        ApiKey.ALTER_REPLICA_STATE,
        # the ACL APIs: answered SECURITY_DISABLED while no authorizer is configured
        # (controller.ops.acls), NOT_CONTROLLER by a standby, as the other admin APIs
        ApiKey.DESCRIBE_ACLS,
        ApiKey.CREATE_ACLS,
        ApiKey.DELETE_ACLS,
        # the controller quorum's: KRaft's Raft RPCs, served by every node, a sole
        # voter included (Fetch of `__cluster_metadata` partition 0 only: `SERVED_VERSIONS`)
        ApiKey.FETCH,
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.DESCRIBE_QUORUM,
        ApiKey.FETCH_SNAPSHOT,
    }
)
#: Served versions narrower than the codec's: the controller serves Fetch from v13 (topic ids:
#: KRaft fetches `__cluster_metadata` by its topic id), though the codec decodes v0-17 (captures).
SERVED_VERSIONS: dict[int, Versions] = {ApiKey.FETCH: Versions(13, 17)}


def served_versions(key: int) -> Versions:
    """The versions of an inbound API the controller serves (what ApiVersions lists)."""
    return SERVED_VERSIONS.get(key) or api(key).versions


#: APIs the controller sends to brokers (and the broker simulator serves).
OUTBOUND_API_KEYS = frozenset({ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA})
#: APIs only decoded (analytics of captures from real clusters): nobody in fencer sends or serves them.
#: UpdateMetadata is a ZooKeeper-era controller's metadata push, which fencer's controller does not
#: make (see protocol/messages/update_metadata.py).
DECODE_ONLY_API_KEYS = frozenset({ApiKey.UPDATE_METADATA})
