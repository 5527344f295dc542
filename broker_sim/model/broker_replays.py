"""The broker's requests built on stale state on purpose, in chaos, and their answers: stale
replays (`stale`) and ISR probes (`leadership.probe`: an expansion built on a stale view of a
follower). `BrokerModel` sends them on its data channel (see its module rules).

Rules:
- A deposed leader (its listener shows a newer leader epoch of a partition it led) may replay its
  ISR change on the old leader epoch; an ending incarnation plans the requests its successor
  replays (`stale.previous_incarnation_plans`). An applied ISR change is planned for a re-send
  where its answer is read (`BrokerModel._alter_partition_answer`).
- An ISR probe goes at most once per `stale.REPLAY_GAP_S`, drawn with a seeded chance
  (`PROBE_CHANCE`) once a follower qualifies.
- A replay answered NOT_CONTROLLER judged nothing: it goes again after a backoff (`stale`).
"""

from __future__ import annotations

from protocol.api_keys import ApiKey
from protocol.spec import Data

from . import requests, stale
from .answers import not_controller
from .broker_state import BrokerState
from .events import DATA, Outgoing, StaleAnswered
from .leadership import Led
from .requests import Proposal

PROBE_CHANCE = 0.5


class StaleReplaying(BrokerState):
    """The stale replays and ISR probes of `BrokerModel` (see the module rules)."""

    def _stale_answer(self, plan: stale.StalePlan, response: Data, t: float) -> None:
        """A replay's answer is journalled, unless it says NOT_CONTROLLER: then nothing was judged,
        and the replay goes again after a backoff (`stale`)."""
        if not_controller(response):
            self.replays.not_judged += 1
            self.replays.again(plan, t + self.timing.backoff(self.replays.not_judged))
            return
        self.replays.judged()
        errors, accepted = stale.judge(response)
        self.events.append(StaleAnswered(plan, self.epoch, tuple(errors), accepted))

    def _maybe_replay_deposed(self, led: Led, t: float) -> None:
        version = self.lifecycle.versions.get(ApiKey.ALTER_PARTITION)
        if version is None or not self.replays.may_replay(t, 0.5):
            return
        ready = self._with_topic_ids([self.leadership.proposal_for_replay(led, self.followers, self.epoch, t)])
        if ready:
            self.replays.plans.append(
                stale.alter_partition_plan(stale.OLD_LEADER_EPOCH, version, self.broker_id, self.epoch, ready)
            )

    def _probe(self, t: float) -> Outgoing | None:
        """An ISR expansion built on a stale view of a follower (`leadership.probe`), at most one per
        `stale.REPLAY_GAP_S`, drawn with a seeded chance once a follower qualifies."""
        version = self.lifecycle.versions.get(ApiKey.ALTER_PARTITION)
        if version is None or not self.leadership.led:
            return None
        found = self.leadership.probe(t, self.followers, self.epoch, member_epochs=version >= 3)
        if found is None:
            return None
        proposal, target = found
        self.replays.last_probe = t
        if self.rng.random() >= PROBE_CHANCE:
            self.leadership.led[(proposal.topic, proposal.partition)].in_flight = False
            return None
        ready = self._with_topic_ids([proposal])
        if not ready:
            return None
        request = requests.alter_partition(version, self.broker_id, self.epoch, ready)
        return Outgoing(DATA, "alter-partition", version, request, proposals=tuple(ready), probe=target)

    def _plan_previous_incarnation(self, t: float) -> None:
        def replayable(led: Led) -> Proposal | None:
            ready = self._with_topic_ids([self.leadership.proposal_for_replay(led, self.followers, self.epoch, t)])
            return ready[0] if ready else None

        hosted = sorted((v for v in self.views.values() if v.hosted), key=lambda v: (v.topic_name, v.partition))
        self.replays.plans.extend(
            stale.previous_incarnation_plans(
                self.rng,
                self.broker_id,
                self.epoch,
                self.lifecycle.versions,
                self.leadership.led,
                hosted,
                replayable,
                self._topic_id,
            )
        )
