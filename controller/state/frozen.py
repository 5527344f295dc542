"""A frozen copy of the durable state: taken on the event loop in milliseconds, read anywhere.

Snapshots and `/state` must describe one consistent state, yet building their records or JSON
for a large cluster takes far longer than the event loop may be held. So the shell freezes the
state (cheap) and does the slow part from the frozen copy while replay goes on: a snapshot is
encoded on the event loop in paced slices (`ControllerEngine.encode_snapshot`: that work holds
the GIL, so a thread would only take the loop's turns), `/state` is built in a worker thread.

Rules:
- Registrations (`BrokerRegistration`, `PartitionRegistration`) are immutable values that replay
  replaces, never edits, so freezing copies only the containers: the broker dict and each
  topic's partition dict (C-speed copies, a few milliseconds for 100,000 partitions). A topic's
  frozen copy is kept on the topic until a replay changes it, so a freeze copies only the topics
  changed since the last one (100,000 one-partition topics would otherwise take ~150 ms).
- What the state keeps without acting on it (`state.kept`: configs, features, ACLs, ...) is
  frozen the same way: immutable values in dicts copied only after a replay changed them.
- A frozen state is never mutated and shares nothing mutable with the live state.
- What a snapshot holds is built from a frozen state by `controller.ops.snapshot`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from .kept import FrozenKept
from .model import BrokerRegistration, PartitionRegistration

if TYPE_CHECKING:
    from .controller_state import ControllerConfig, ControllerState
    from .replication import Topic


class FrozenTopic(NamedTuple):
    """A topic as frozen (a named tuple: a freeze builds one per topic, on the event loop)."""

    topic_id: uuid.UUID
    name: str
    partitions: dict[int, PartitionRegistration]  # a private copy: never mutated


@dataclass(frozen=True, slots=True)
class FrozenState:
    config: ControllerConfig
    controller_epoch: int
    last_offset: int
    brokers: dict[int, BrokerRegistration]  # a private copy: never mutated
    topics: tuple[FrozenTopic, ...]  # in no particular order
    kept: FrozenKept  # configs, features, ACLs, ... (`state.kept`)

    def sorted_topics(self) -> list[FrozenTopic]:
        return sorted(self.topics, key=lambda topic: topic.name)


def freeze(state: ControllerState) -> FrozenState:
    """A consistent copy of `state`'s durable part (call on the thread that replays)."""
    return FrozenState(
        config=state.config,
        controller_epoch=state.controller_epoch,
        last_offset=state.last_offset,
        brokers=dict(state.cluster.brokers),
        topics=tuple(_frozen_topic(topic) for topic in state.replication.topics.values()),
        kept=state.kept.frozen(),
    )


def _frozen_topic(topic: Topic) -> FrozenTopic:
    """The topic's frozen copy: the one kept from the last freeze if no replay changed it since."""
    frozen: FrozenTopic | None = topic.frozen
    if frozen is None:
        frozen = topic.frozen = FrozenTopic(topic.topic_id, topic.name, dict(topic.partitions))
    return frozen
