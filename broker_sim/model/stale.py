"""Stale replays: requests built with epochs the broker knows are stale, sent on purpose.

Rules (the chaos scenario; each replay is journalled with its answer):
- "previous-incarnation" (KIP-380): built by an incarnation as it ends (crash or shutdown), one of
  each kind it can build: an AlterPartition for a partition it led, a ControlledShutdown (only v2+,
  which carries the broker epoch: v0-1 cannot be told apart from a fresh one), an AlterReplicaState
  OFFLINE for a replica it hosted and a BrokerHeartbeat. Sent only once the next incarnation holds
  a different broker epoch.
- "old-leader-epoch" (KIP-497): a deposed leader re-sends an ISR change built on the leader epoch
  it had, once its listener shows a newer leader epoch.
- "old-partition-epoch": an applied AlterPartition re-sent as it was, once the answer showed a newer
  partition epoch.
Replays go out as the same body at the same version (the shell gives them a new correlation id).
`judge` reads the answer: the errors (top level, then each partition's in the answer's order) and
whether any NONE stands where the request would have changed state. An answer that says
NOT_CONTROLLER (`answers.not_controller`) judged nothing: the replay is neither journalled nor
counted as sent, and goes back first in line, to be sent again (at the next controller of the
fleet's list) after a backoff (`Replays.again`).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import AlterPartitionResponse
from protocol.messages.alter_replica_state import OFFLINE, AlterReplicaStateResponse
from protocol.messages.broker_heartbeat import BrokerHeartbeatResponse
from protocol.messages.controlled_shutdown import ControlledShutdownResponse
from protocol.spec import ZERO_UUID, Data

from . import requests
from .disks import Replica
from .leadership import Led
from .requests import Proposal
from .views import PartitionView

PREVIOUS_INCARNATION = "previous-incarnation"
OLD_LEADER_EPOCH = "old-leader-epoch"
OLD_PARTITION_EPOCH = "old-partition-epoch"


@dataclass(frozen=True, slots=True)
class StalePlan:
    reason: str
    api_key: int
    version: int
    body: Data
    stale_broker_epoch: int
    needs_new_epoch: bool  # send only when the broker's epoch differs from stale_broker_epoch
    detail: dict[str, Any] = field(default_factory=dict)


def judge(response: Data) -> tuple[list[int], bool]:
    """(errors: top level then partitions, accepted: any NONE where state would have changed)."""
    if isinstance(response, (ControlledShutdownResponse, BrokerHeartbeatResponse)):
        return [response.error_code], response.error_code == ErrorCode.NONE
    if isinstance(response, AlterPartitionResponse):
        codes = [p.error_code for t in response.topics for p in t.partitions]
        return [response.error_code, *codes], response.error_code == ErrorCode.NONE and ErrorCode.NONE in codes
    if isinstance(response, AlterReplicaStateResponse):
        codes = [p.error_code for t in response.topics for p in t.partitions]
        return [response.error_code, *codes], response.error_code == ErrorCode.NONE and ErrorCode.NONE in codes
    raise TypeError(f"no stale replay answers with {type(response).__name__}")


def previous_incarnation_plans(
    rng: random.Random,
    broker_id: int,
    broker_epoch: int,
    negotiated: Mapping[int, int],
    led: Mapping[tuple[str, int], Led],
    hosted: Sequence[PartitionView],
    replayable: Callable[[Led], Proposal | None],
    topic_id: Callable[[PartitionView], uuid.UUID],
) -> list[StalePlan]:
    """The requests the ending incarnation builds for later replays, one of each kind it can: an ISR
    change of a partition it leads, a ControlledShutdown (v2+ only), an AlterReplicaState OFFLINE
    of a replica it hosts, a BrokerHeartbeat."""
    plans: list[StalePlan | None] = []
    if led and ApiKey.ALTER_PARTITION in negotiated:
        proposal = replayable(led[rng.choice(sorted(led))])
        if proposal is not None:
            plans.append(
                alter_partition_plan(
                    PREVIOUS_INCARNATION, negotiated[ApiKey.ALTER_PARTITION], broker_id, broker_epoch, [proposal]
                )
            )
    if negotiated.get(ApiKey.CONTROLLED_SHUTDOWN, 0) >= 2:
        plans.append(controlled_shutdown_plan(negotiated[ApiKey.CONTROLLED_SHUTDOWN], broker_id, broker_epoch))
    if hosted and ApiKey.ALTER_REPLICA_STATE in negotiated:
        view = rng.choice(list(hosted))
        replica = (view.topic_name, topic_id(view), view.partition)
        version = negotiated[ApiKey.ALTER_REPLICA_STATE]
        if version == 0 or replica[1] != ZERO_UUID:
            plans.append(replica_state_plan(version, broker_id, broker_epoch, replica))
    if ApiKey.BROKER_HEARTBEAT in negotiated:
        plans.append(heartbeat_plan(negotiated[ApiKey.BROKER_HEARTBEAT], broker_id, broker_epoch))
    return [plan for plan in plans if plan is not None]


def alter_partition_plan(
    reason: str, version: int, broker_id: int, broker_epoch: int, proposals: Sequence[Proposal]
) -> StalePlan:
    body = requests.alter_partition(version, broker_id, broker_epoch, proposals)
    return StalePlan(
        reason, ApiKey.ALTER_PARTITION, version, body, broker_epoch, reason == PREVIOUS_INCARNATION, _detail(proposals)
    )


def resent_plan(version: int, body: Data, broker_epoch: int, proposals: Sequence[Proposal]) -> StalePlan:
    """An applied AlterPartition again, as it was sent."""
    return StalePlan(
        OLD_PARTITION_EPOCH, ApiKey.ALTER_PARTITION, version, body, broker_epoch, False, _detail(proposals)
    )


def controlled_shutdown_plan(version: int, broker_id: int, broker_epoch: int) -> StalePlan:
    body = requests.controlled_shutdown(version, broker_id, broker_epoch)
    return StalePlan(PREVIOUS_INCARNATION, ApiKey.CONTROLLED_SHUTDOWN, version, body, broker_epoch, True)


def heartbeat_plan(version: int, broker_id: int, broker_epoch: int) -> StalePlan:
    """A heartbeat of the incarnation of `broker_epoch`, caught up to its registration."""
    body = requests.broker_heartbeat(version, broker_id, broker_epoch, broker_epoch, False, ())
    return StalePlan(PREVIOUS_INCARNATION, ApiKey.BROKER_HEARTBEAT, version, body, broker_epoch, True)


def replica_state_plan(version: int, broker_id: int, broker_epoch: int, replica: Replica) -> StalePlan:
    body = requests.alter_replica_state(version, broker_id, broker_epoch, OFFLINE, "stale replay", [replica])
    detail = {"partitions": [{"topic": replica[0], "topic_id": str(replica[1]), "partition": replica[2]}]}
    return StalePlan(PREVIOUS_INCARNATION, ApiKey.ALTER_REPLICA_STATE, version, body, broker_epoch, True, detail)


def _detail(proposals: Sequence[Proposal]) -> dict[str, Any]:
    return {
        "partitions": [
            {
                "topic": p.topic,
                "topic_id": str(p.topic_id),
                "partition": p.partition,
                "leader_epoch": p.leader_epoch,
                "partition_epoch": p.partition_epoch,
                "isr": list(p.isr),
            }
            for p in proposals
        ]
    }


#: At most one stale replay of a live incarnation (or one probe) per broker in this time.
REPLAY_GAP_S = 4.0


class Replays:
    """A broker's stale replays: the plans waiting to be sent, and their pacing (at most one replay
    and one probe per `REPLAY_GAP_S`, each replay drawn with a seeded chance). Plans for a
    previous incarnation survive a bounce; the others do not."""

    def __init__(self, enabled: bool, rng: random.Random) -> None:
        self.enabled = enabled
        self.rng = rng
        self.plans: list[StalePlan] = []
        self.last_replay = self.last_probe = -1e9
        self.retry_at = 0.0  # a replay answered NOT_CONTROLLER waits until then
        self.not_judged = 0  # consecutive NOT_CONTROLLER answers to replays (the backoff's exponent)

    def may_replay(self, t: float, chance: float) -> bool:
        if not self.enabled or t - self.last_replay < REPLAY_GAP_S or self.rng.random() >= chance:
            return False
        self.last_replay = t
        return True

    def probe_due(self, t: float) -> bool:
        return self.enabled and t - self.last_probe >= REPLAY_GAP_S

    def new_incarnation(self) -> None:
        self.plans = [plan for plan in self.plans if plan.needs_new_epoch]

    def again(self, plan: StalePlan, retry_at: float) -> None:
        """`plan` was answered NOT_CONTROLLER: first in line again, not before `retry_at`."""
        self.plans.insert(0, plan)
        self.retry_at = retry_at

    def judged(self) -> None:
        """A replay got an answer that judged it (or none at all): the backoff starts over."""
        self.not_judged = 0

    def take_ready(self, epoch: int, t: float) -> StalePlan | None:
        """The first plan that may go at `t` (one for a previous incarnation waits for a new epoch)."""
        if t < self.retry_at:
            return None
        for plan in self.plans:
            if not plan.needs_new_epoch or epoch != plan.stale_broker_epoch:
                self.plans.remove(plan)
                return plan
        return None
