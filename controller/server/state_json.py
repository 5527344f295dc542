"""The controller's state as the JSON document `GET /state` serves (see `controller.server.http`).

The document: cluster id, controller id and epoch, the last applied offset, the brokers (by id),
what the state keeps without acting on it (`controller.state.kept`: feature levels, the ZooKeeper
migration state, registered controllers, the producer id block, configs per resource, the ACL
count and ACLs, client quotas, SCRAM users, delegation tokens), then the topics (by name), each
with its partitions (by index).

Secrets are never in the document: SCRAM credentials show only user names and mechanisms (no
salts, keys or iteration counts); delegation tokens only their ids, owners, requesters, renewers
and timestamps (the log holds no HMACs).

Rules:
- `state_json_pieces` is the definition: the document as JSON text, in pieces. `state_json` is
  that text parsed (JSON-ready values), so the two cannot disagree.
- Both read a `FrozenState` (the engine's `freeze()`, `engine_views.StateView`), never the live
  state, so they may run in a worker thread while the event loop goes on replaying; the document
  is the state at the freeze.
- Built in a worker thread, the text still shares the GIL with the event loop, so it is built to
  hold the GIL briefly and to leave the garbage collector nothing to do:
  - A partition is written by one f-string: its fields are ints and tuples of ints, which need no
    escaping. That is ~2.5x faster than building dicts and encoding them with json's C encoder,
    and it keeps no containers alive: a build that holds thousands of dicts at a time promotes
    them to the collector's oldest generation and sets off full collections, each walking the
    whole heap with the GIL held (up to ~0.5 s at 100,000 partitions, measured without the
    daemon's `gc.freeze()`). Pure-Python code gives the GIL up at every switch interval.
  - What has strings (brokers, a topic's name) goes through `json.dumps` for the escaping, one
    small value at a time: the C encoder holds the GIL for the whole of a call, so it never gets
    a large one (encoding 100,000 partitions in one call holds it ~0.3 s). No `indent`: that
    selects the pure-Python encoder, which lets go of the GIL but is ~8x slower than the C one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from ..log.ids import uuid_string
from ..state.frozen import FrozenState, FrozenTopic
from ..state.kept import FrozenKept
from ..state.model import BrokerRegistration, PartitionRegistration
from .engine_views import StateView

#: Partitions in one piece of text (~170 KB).
PARTITIONS_PER_PIECE = 1000


def state_json(state: StateView | FrozenState) -> dict[str, object]:
    """The controller's state as JSON-ready values, sorted by broker id, topic name and partition.

    Given a view of the engine's state, it is frozen first; given a frozen state (`freeze()`),
    this may run in a worker thread while the engine goes on replaying."""
    frozen = state if isinstance(state, FrozenState) else state.freeze()
    document: dict[str, object] = json.loads("".join(state_json_pieces(frozen)))
    return document


def state_json_pieces(frozen: FrozenState, partitions_per_piece: int = PARTITIONS_PER_PIECE) -> Iterator[str]:
    """The document as JSON text ending with a newline, in pieces of at most `partitions_per_piece`
    partitions each (ASCII only: non-ASCII names are escaped)."""
    yield _open_array(_head_json(frozen), "configs")
    yield from _kept_pieces(frozen.kept, partitions_per_piece)
    yield "], " + json.dumps("topics") + ": ["
    for number, topic in enumerate(frozen.sorted_topics()):
        yield (", " if number else "") + _open_array(_topic_head_json(topic), "partitions")
        indexes = sorted(topic.partitions)
        partitions = topic.partitions
        for start in range(0, len(indexes), partitions_per_piece):
            chunk = ", ".join(_partition_text(i, partitions[i]) for i in indexes[start : start + partitions_per_piece])
            yield (", " if start else "") + chunk
        yield "]}"
    yield "]}\n"


def _open_array(head: dict[str, Any], key: str) -> str:
    """The text of `head` with one more member, `key`, opened as an array: `{..., "key": [`."""
    return f"{json.dumps(head)[:-1]}, {json.dumps(key)}: ["


def _head_json(frozen: FrozenState) -> dict[str, Any]:
    """Everything but the topics (which come last) and the arrays of `_kept_pieces`."""
    kept = frozen.kept
    block = kept.producer_ids
    return {
        "cluster_id": frozen.config.cluster_id,
        "controller_id": frozen.config.node_id,
        "controller_epoch": frozen.controller_epoch,
        "last_applied_offset": frozen.last_offset,
        "brokers": [_broker_json(frozen.brokers[b]) for b in sorted(frozen.brokers)],
        "features": dict(sorted(kept.features.items())),
        "zk_migration_state": kept.zk_migration_state,
        "controllers": [_controller_json(kept, c) for c in sorted(kept.controllers)],
        "producer_ids": None if block is None else block._asdict(),
        "acl_count": len(kept.acls),
    }


def _controller_json(kept: FrozenKept, controller_id: int) -> dict[str, Any]:
    record = kept.controllers[controller_id]
    return {
        "id": controller_id,
        "incarnation_id": str(record.incarnation_id),
        "zk_migration_ready": record.zk_migration_ready,
        "listeners": [{"name": e.name, "host": e.host, "port": e.port} for e in record.end_points],
        "features": {f.name: [f.min_supported_version, f.max_supported_version] for f in record.features},
    }


def _kept_pieces(kept: FrozenKept, per_piece: int) -> Iterator[str]:
    """The arrays of what may be large (configs, ACLs, quotas, SCRAM users, tokens), after the
    opened "configs" array: each element encoded alone, `per_piece` elements a piece."""
    configs = (
        {"resource_type": kind, "resource_name": name, "configs": dict(sorted(kept.configs[kind, name].items()))}
        for kind, name in sorted(kept.configs)
    )
    acls = (
        {
            "id": str(acl.id),
            "resource_type": acl.resource_type,
            "resource_name": acl.resource_name,
            "pattern_type": acl.pattern_type,
            "principal": acl.principal,
            "host": acl.host,
            "operation": acl.operation,
            "permission_type": acl.permission_type,
        }
        for acl in (kept.acls[acl_id] for acl_id in sorted(kept.acls))
    )
    quotas = (
        {
            "entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity],
            "quotas": dict(sorted(kept.quotas[entity].items())),
        }
        for entity in sorted(kept.quotas, key=lambda entity: [(kind, name or "") for kind, name in entity])
    )
    users: dict[str, list[int]] = {}
    for user, mechanism in sorted(kept.scram):
        users.setdefault(user, []).append(mechanism)
    scram = ({"user": user, "mechanisms": mechanisms} for user, mechanisms in users.items())
    tokens = (
        {
            "token_id": token.token_id,
            "owner": token.owner,
            "requester": token.requester,
            "renewers": list(token.renewers),
            "issue_timestamp": token.issue_timestamp,
            "expiration_timestamp": token.expiration_timestamp,
            "max_timestamp": token.max_timestamp,
        }
        for token in (kept.tokens[token_id] for token_id in sorted(kept.tokens))
    )
    yield from _array_pieces(configs, per_piece)
    for key, values in (
        ("acls", acls),
        ("client_quotas", quotas),
        ("scram_users", scram),
        ("delegation_tokens", tokens),
    ):
        yield f"], {json.dumps(key)}: ["
        yield from _array_pieces(values, per_piece)


def _array_pieces(values: Iterable[Any], per_piece: int) -> Iterator[str]:
    """The elements of an opened JSON array, `per_piece` a piece, each encoded by its own call."""
    chunk: list[str] = []
    first = True
    for value in values:
        chunk.append(json.dumps(value))
        if len(chunk) == per_piece:
            yield ("" if first else ", ") + ", ".join(chunk)
            chunk, first = [], False
    if chunk:
        yield ("" if first else ", ") + ", ".join(chunk)


def _broker_json(broker: BrokerRegistration) -> dict[str, Any]:
    return {
        "id": broker.broker_id,
        "epoch": broker.epoch,
        "incarnation_id": str(broker.incarnation_id),
        "fenced": broker.fenced,
        "in_controlled_shutdown": broker.in_controlled_shutdown,
        "rack": broker.rack,
        "listeners": [{"name": e.name, "host": e.host, "port": e.port} for e in broker.listeners],
    }


def _topic_head_json(topic: FrozenTopic) -> dict[str, Any]:
    """Everything of a topic but its partitions (which come last)."""
    return {"name": topic.name, "topic_id": str(topic.topic_id), "topic_id_base64": uuid_string(topic.topic_id)}


def _partition_text(index: int, part: PartitionRegistration) -> str:
    offline = [replica for replica in part.replicas if part.is_offline(replica)]
    return (
        f'{{"partition": {index}, "leader": {part.leader}, "leader_epoch": {part.leader_epoch}, '
        f'"partition_epoch": {part.partition_epoch}, "isr": [{_ints(part.isr)}], '
        f'"replicas": [{_ints(part.replicas)}], "offline_replicas": [{_ints(offline)}], '
        f'"leader_recovery_state": {part.leader_recovery_state}}}'
    )


def _ints(values: Iterable[int]) -> str:
    return ", ".join(map(str, values))
