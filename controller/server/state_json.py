"""The controller's state as the JSON document `GET /state` serves (see `controller.server.http`).

The document: cluster id, controller id and epoch, the last applied offset, the brokers (by id),
then the topics (by name), each with its partitions (by index).

Rules:
- `state_json_pieces` is the definition: the document as JSON text, in pieces. `state_json` is
  that text parsed (JSON-ready values), so the two cannot disagree.
- Both read a `FrozenState` (`ControllerCore.freeze()`), never the live state, so they may run in
  a worker thread while the event loop goes on replaying; the document is the state at the freeze.
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

from ..core import ControllerCore
from ..log.ids import uuid_string
from ..state.frozen import FrozenState, FrozenTopic
from ..state.model import BrokerRegistration, PartitionRegistration

#: Partitions in one piece of text (~170 KB).
PARTITIONS_PER_PIECE = 1000


def state_json(state: ControllerCore | FrozenState) -> dict[str, object]:
    """The controller's state as JSON-ready values, sorted by broker id, topic name and partition.

    Given a core, it is frozen first; given a frozen state (`ControllerCore.freeze()`), this may
    run in a worker thread while the core goes on replaying."""
    frozen = state.freeze() if isinstance(state, ControllerCore) else state
    document: dict[str, object] = json.loads("".join(state_json_pieces(frozen)))
    return document


def state_json_pieces(frozen: FrozenState, partitions_per_piece: int = PARTITIONS_PER_PIECE) -> Iterator[str]:
    """The document as JSON text ending with a newline, in pieces of at most `partitions_per_piece`
    partitions each (ASCII only: non-ASCII names are escaped)."""
    yield _open_array(_head_json(frozen), "topics")
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
    """Everything but the topics (which come last)."""
    return {
        "cluster_id": frozen.config.cluster_id,
        "controller_id": frozen.config.node_id,
        "controller_epoch": frozen.controller_epoch,
        "last_applied_offset": frozen.last_offset,
        "brokers": [_broker_json(frozen.brokers[b]) for b in sorted(frozen.brokers)],
    }


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
