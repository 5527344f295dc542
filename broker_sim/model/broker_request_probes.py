"""The broker's request probes (`probes`): what it knows when it builds one, and what it does with
the answer. `BrokerModel` sends them on its data channel (see its module rules).

Rules:
- Request probes are built from what the broker knows (`_knowledge`): besides its views and
  leaderships, the send time of its last heartbeat answered NONE and unfenced (`heard_at`, kept
  while ACTIVE and not shutting down) and the state the controller surely holds for each hosted
  replica (ONLINE on a dir that has not failed in this incarnation, OFFLINE on a failed dir whose
  OFFLINE report was answered NONE). A duplicate registration probe the controller accepted
  replaced this incarnation's registration: the broker registers its own incarnation again at
  once (as after STALE_BROKER_EPOCH), never sending anything more with the replaced epoch.
"""

from __future__ import annotations

from dataclasses import replace

from protocol.messages.alter_replica_state import OFFLINE, ONLINE
from protocol.spec import ZERO_UUID, Data

from . import probes
from .broker_state import BrokerState
from .disks import dir_of
from .events import RequestProbeAnswered
from .lifecycle import Phase


class RequestProbing(BrokerState):
    """The request probes of `BrokerModel` (see the module rules)."""

    def _knowledge(self, t: float) -> probes.Knowledge:
        hosted = sorted((v for v in self.views.values() if v.hosted), key=lambda v: (v.topic_name, v.partition))
        lifecycle = self.lifecycle
        fresh = lifecycle.phase is Phase.ACTIVE and not lifecycle.shutting_down and not lifecycle.want_shut_down
        states: dict[tuple[str, int], int] = {}
        for view in hosted:
            replica = (view.topic_name, view.partition)
            if replica in self.reported_offline and self.disks.offline(*replica):
                states[replica] = OFFLINE
            elif dir_of(*replica) not in self.dirs_failed:
                states[replica] = ONLINE
        return probes.Knowledge(
            broker_id=self.broker_id,
            broker_epoch=self.epoch,
            versions=self.lifecycle.versions,
            cluster_id=self.lifecycle.cluster_id,
            led=self.leadership.led,
            hosted=hosted,
            topic_id=lambda name, topic_id: topic_id if topic_id != ZERO_UUID else self.topic_ids.get(name, ZERO_UUID),
            now=t,
            heard_at=self.heard_at if fresh and self.shutdown is None else None,
            session_timeout_s=self.timing.session_timeout_s,
            replica_states=states,
        )

    def _request_probe_answer(self, plan: probes.ProbePlan, response: Data, t: float) -> None:
        """A request probe's answer is journalled, unless it says NOT_CONTROLLER: then nothing was
        judged, and the probe goes again after a backoff (`probes`)."""
        if probes.judges_nothing(response, plan.probe):
            self.request_probes.again(plan, t + self.timing.backoff(self.request_probes.not_judged + 1))
            return
        self.request_probes.judged()
        errors, accepted = probes.judge(response, plan.probe)
        facts = probes.answer_facts(plan, response, t)
        journalled = replace(plan, detail={**plan.detail, **facts}) if facts else plan
        self.events.append(RequestProbeAnswered(journalled, tuple(errors), accepted))
        replaced = plan.probe == probes.REGISTRATION_DUPLICATE and accepted
        if replaced and self.lifecycle.registered and plan.broker_epoch == self.epoch:
            self.lifecycle.phase = Phase.REGISTERING  # its registration is the probe's now: again, at once
            self.lifecycle.retry_at = t
            self.heard_at = None
