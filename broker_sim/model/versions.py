"""Which version of each API a simulated broker uses, so that the fleet exercises every version.

Rules: a choice is a pure function of (seed, an index, the api key, the range): the index is the
broker id for a broker's APIs and a counter for the admin's requests. Each api key gets a seeded
offset and consecutive indexes take consecutive versions of the range, so any run of as many
consecutive broker ids as an API has versions uses all of them, and the same broker picks the
same versions whatever the process split of the fleet. Negotiation (after ApiVersions) picks in
the intersection of the broker's range and the controller's.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from functools import cache

from protocol.api_keys import ApiKey
from protocol.registry import api
from protocol.versions import Versions

#: the APIs a broker sends after ApiVersions, negotiated against the controller's ranges
NEGOTIATED = (
    ApiKey.BROKER_REGISTRATION,
    ApiKey.BROKER_HEARTBEAT,
    ApiKey.CONTROLLED_SHUTDOWN,
    ApiKey.ALTER_PARTITION,
    ApiKey.ALTER_REPLICA_STATE,
)
ADMIN = (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.ELECT_LEADERS)


@cache
def _offset(seed: int, api_key: int) -> int:
    return random.Random(f"{seed}:version:{api_key}").randrange(1 << 16)


def spread(seed: int, index: int, api_key: int, versions: Versions) -> int:
    """The version `index` uses out of `versions` (non-empty)."""
    span = versions.highest - versions.lowest + 1
    return versions.lowest + (_offset(seed, api_key) + index) % span


def ours(api_key: int) -> Versions:
    """Every version the codec (and so the fleet) speaks."""
    return api(api_key).versions


def negotiate(seed: int, broker_id: int, theirs: Mapping[int, Versions]) -> dict[int, int]:
    """Versions of the negotiated APIs in both ranges; an API the controller lacks is left out."""
    chosen: dict[int, int] = {}
    for key in NEGOTIATED:
        mine = ours(key)
        other = theirs.get(key)
        if other is None:
            continue
        both = Versions(max(mine.lowest, other.lowest), min(mine.highest, other.highest))
        if not both.empty:
            chosen[key] = spread(seed, broker_id, key, both)
    return chosen


def first_contact(seed: int, broker_id: int) -> dict[int, int]:
    """Versions used before anything is known of the controller: DescribeCluster and ApiVersions."""
    return {key: spread(seed, broker_id, key, ours(key)) for key in (ApiKey.DESCRIBE_CLUSTER, ApiKey.API_VERSIONS)}


def listener_max_versions(seed: int, broker_id: int) -> dict[int, int]:
    """The highest LeaderAndIsr and StopReplica versions the broker's listener offers."""
    return {key: spread(seed, broker_id, key, ours(key)) for key in (ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA)}


def admin_version(seed: int, counter: int, api_key: int) -> int:
    return spread(seed, counter, api_key, ours(api_key))
