"""One simulated broker: its lifecycle, its data channel, its disks, its controlled shutdown and its
stale replays, driven by the shell with time passed in.

Rules:
- Two channels, one request in flight on each (Kafka's broker also keeps heartbeats and
  AlterPartition on separate controller channels): `next_lifecycle` (see `lifecycle`) and
  `next_data`. Each returns the request to send now or the time to ask again; the shell answers
  through `lifecycle_answered` / `data_answered`, or `lifecycle_failed` / `data_failed`. Facts go
  to `events` (the shell drains them).
- The data channel, in priority order: the ControlledShutdown RPC (retried every
  `shutdown_retry_s` until nothing remains), a stale replay that is ready, AlterReplicaState
  (OFFLINE for the replicas of a failed log dir, ONLINE after its repair), in chaos a probe
  (`leadership.probe`) and a request probe (`probes`: never during a controlled shutdown), then
  the leader's ISR decisions, taken once per tick at the tick's
  logical time (ticks are never skipped while the broker runs, so the same answers give the
  same requests). A broker's ticks are offset by a seeded phase, so that a thousand brokers do
  not all decide at the same instant.
- The listener's views are the only source of what the broker leads and hosts; the model reads
  them again whenever their version changes.
- Controlled shutdown: `shutdown` (its ways and how it ends); either way the incarnation ends
  (`incarnation_over`).
- Log dirs and replica states: `disks`. Stale replays and ISR probes: `stale`, sent and answered
  by `broker_replays`. Request probes: `probes`, built and answered by `broker_request_probes`.
- NOT_CONTROLLER (41) is a retriable error on both channels (the shell moves to the next
  controller of its list): the lifecycle retries (`lifecycle`), an ISR change is proposed again
  from the same committed epochs after a backoff (`leadership`; the next controller may answer with
  a newer partition epoch, which is adopted as any answer's), a ControlledShutdown is asked again
  after `shutdown_retry_s`, an AlterReplicaState after a backoff, and a stale replay or a request
  probe so answered is sent again (`stale`, `probes`): nothing is journalled as judged by an answer
  that judged nothing (`probes.judges_nothing`: a partition's NOT_CONTROLLER is row b's answer to
  the probe built for it).
- What the broker holds is `broker_state.BrokerState`; `BrokerModel` adds the channels, leadership,
  controlled shutdown and disks to the replay and request-probe parts built on it.
"""

from __future__ import annotations

import uuid

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import AlterPartitionResponse
from protocol.messages.alter_replica_state import OFFLINE, AlterReplicaStateResponse
from protocol.messages.broker_heartbeat import BrokerHeartbeatResponse
from protocol.messages.controlled_shutdown import ControlledShutdownResponse
from protocol.spec import ZERO_UUID, Data

from . import requests, stale
from .broker_replays import StaleReplaying
from .broker_request_probes import RequestProbing
from .broker_state import Views
from .disks import Replica, dir_of
from .events import (
    DATA,
    Outgoing,
    PartitionAcked,
    ProbeAnswered,
    ReplicaStateAnswered,
    RequestProbeAnswered,
    ShapeProblem,
    StaleAnswered,
)
from .lifecycle import Phase
from .shutdown import Shutdown


class BrokerModel(StaleReplaying, RequestProbing):
    """One simulated broker (see the module rules); its state is `BrokerState`'s."""

    # ------------------------------------------------------------------ incarnations
    def start(self, t: float, host: str, port: int, security_protocol: int = 0) -> None:
        """A new incarnation (a fresh incarnation id from the broker's rng) listening on host:port
        (registered with `security_protocol`: Kafka's code, PLAINTEXT by default)."""
        self.incarnations += 1
        if self.incarnations > 1:
            self.ready_at = t + self.timing.catch_up_s
        self.lifecycle.start(t, uuid.UUID(int=self.rng.getrandbits(128)), host, port, security_protocol)
        self.leadership.led.clear()
        self.views, self._views_version = {}, -1
        self.disks.reset()
        self.shutdown, self.incarnation_over, self.data_in_flight = None, False, False
        self.replays.new_incarnation()  # only requests built for a later incarnation survive a bounce
        self.request_probes.new_incarnation()
        self.heard_at = None
        self.dirs_failed.clear()
        self.reported_offline.clear()
        self.paused_until = 0.0
        self.next_tick = self._tick_at_or_after(t)

    def end_incarnation(self, t: float) -> None:
        """The incarnation stops at once (a hard crash, a given-up shutdown, or a finished one)."""
        self._end_shutdown(None)
        if self.replays.enabled and self.lifecycle.registered:
            self._plan_previous_incarnation(t)
        self.lifecycle.stop()
        self.leadership.led.clear()
        self.data_in_flight = False

    def abandon_shutdown(self) -> None:
        """The run ends: a shutdown still in progress ends unfinished."""
        self._end_shutdown(None)

    def pause(self, until: float, t: float) -> None:
        self.paused_at = t
        self.paused_until = self.resumed_at = until

    def running(self, t: float) -> bool:
        return self.lifecycle.registered and t >= self.paused_until and not self.incarnation_over

    # ------------------------------------------------------------------ what followers look like
    def caught_up(self, topic: str, partition: int, t: float, lagging: bool) -> bool:
        """Whether this broker's replica is caught up with its leader at t (the leader's fetch view)."""
        return not lagging and self.running(t) and self.caught_up_while_running(topic, partition, t)

    def caught_up_while_running(self, topic: str, partition: int, t: float) -> bool:
        """`caught_up` for a running broker outside lag episodes: restarted long enough ago, hosting
        the replica on a healthy dir."""
        if t < self.ready_at:
            return False
        view = self.views.get((topic, partition))
        if view is None or view.stopped or view.deleted:
            return False
        return self.disks.healthy(topic, partition, t)

    def eligible(self, t: float) -> bool:
        return self.lifecycle.phase is Phase.ACTIVE and self.shutdown is None and self.running(t)

    # ------------------------------------------------------------------ lifecycle channel
    def next_lifecycle(self, t: float) -> Outgoing | float:
        if t < self.paused_until:
            return self.paused_until
        if self.incarnation_over:
            return float("inf")
        return self.lifecycle.next_request(t)

    def lifecycle_answered(self, out: Outgoing, response: Data, t: float) -> None:
        self.events.extend(self.lifecycle.answered(out, response, t))
        if isinstance(response, BrokerHeartbeatResponse) and out.purpose == "heartbeat":
            if response.error_code == ErrorCode.NONE and not response.is_fenced:
                self.heard_at = self.lifecycle.last_heartbeat_sent
            elif response.error_code != ErrorCode.NOT_CONTROLLER:
                self.heard_at = None
        if (
            isinstance(response, BrokerHeartbeatResponse)
            and self.lifecycle.want_shut_down
            and response.error_code == ErrorCode.NONE
            and response.should_shut_down
        ):
            self._finish_shutdown(t)

    def lifecycle_failed(self, out: Outgoing, t: float) -> None:
        self.lifecycle.failed(out, t)

    # ------------------------------------------------------------------ data channel
    def next_data(self, t: float, views: Views, views_version: int) -> Outgoing | float:
        if t < self.paused_until:
            return self.paused_until
        if self.data_in_flight or self.incarnation_over or not self.lifecycle.registered:
            return t + self.timing.tick_s
        if views_version != self._views_version:
            self.views, self._views_version = views, views_version
            self._sync(t)
        out = self._next_data(t)
        if isinstance(out, Outgoing):
            self.data_in_flight = True
        return out

    def _next_data(self, t: float) -> Outgoing | float:
        shutdown = self.shutdown
        if shutdown is not None and shutdown.over_bound(t, self.timing.shutdown_bound_s):
            self._end_shutdown(None)
            self.incarnation_over = True
            return float("inf")
        if shutdown is not None and shutdown.rpc_due(t):
            version = self.lifecycle.versions.get(ApiKey.CONTROLLED_SHUTDOWN, 0)
            body = requests.controlled_shutdown(version, self.broker_id, self.epoch)
            return Outgoing(DATA, "shutdown", version, body)
        plan = self.replays.take_ready(self.epoch, t)
        if plan is not None:
            return Outgoing(DATA, "stale", plan.version, plan.body, stale=plan)
        if self.disks.pending and t >= self.disks.retry_at:
            self.disks.sent_at = t
            return self._replica_state(*self.disks.pending[0])
        if shutdown is None and self.replays.probe_due(t):
            probe = self._probe(t)
            if probe is not None:
                return probe
        if shutdown is None and self.request_probes.due(t):
            request_probe = self.request_probes.take(t, self._knowledge(t))
            if request_probe is not None:
                version, probe_body = request_probe.version, request_probe.body
                return Outgoing(DATA, "request-probe", version, probe_body, request_probe=request_probe)
        while t >= self.next_tick:
            tick = self.next_tick
            self.next_tick += self.timing.tick_s
            if shutdown is None:
                proposals = self._with_topic_ids(self.leadership.decide(tick, self.followers, self.epoch))
                if proposals:
                    version = self.lifecycle.versions.get(ApiKey.ALTER_PARTITION, 0)
                    request = requests.alter_partition(version, self.broker_id, self.epoch, proposals)
                    return Outgoing(DATA, "alter-partition", version, request, proposals=tuple(proposals))
        wake = self.next_tick
        if shutdown is not None and shutdown.rpc_pending:
            wake = min(wake, shutdown.retry_at)
        if self.disks.pending:
            wake = min(wake, self.disks.retry_at)
        if self.replays.plans and self.replays.retry_at > t:
            wake = min(wake, self.replays.retry_at)
        return wake

    def data_answered(self, out: Outgoing, response: Data, t: float) -> None:
        self.data_in_flight = False
        if out.probe is not None and isinstance(response, AlterPartitionResponse):
            errors = [response.error_code, *(p.error_code for tp in response.topics for p in tp.partitions)]
            self.events.append(ProbeAnswered(out.probe, out.proposals[0], out.version, tuple(errors)))
        if out.request_probe is not None:
            self._request_probe_answer(out.request_probe, response, t)
        elif out.stale is not None:
            self._stale_answer(out.stale, response, t)
        elif isinstance(response, AlterPartitionResponse):
            self._alter_partition_answer(out, response, t)
        elif isinstance(response, ControlledShutdownResponse):
            self._shutdown_answer(response, t)
        elif isinstance(response, AlterReplicaStateResponse):
            self._replica_state_answer(out, response, t)

    def data_failed(self, out: Outgoing, t: float) -> None:
        self.data_in_flight = False
        if out.probe is not None:
            self.events.append(ProbeAnswered(out.probe, out.proposals[0], out.version, ()))
        if out.request_probe is not None:
            self.request_probes.judged()
            self.events.append(RequestProbeAnswered(out.request_probe, (), False))
        elif out.stale is not None:
            self.replays.judged()
            self.events.append(StaleAnswered(out.stale, self.epoch, (), False))
        elif out.purpose == "alter-partition":
            self.leadership.failed(out.proposals, t)
        elif out.purpose == "shutdown" and self.shutdown is not None:
            self.shutdown.rpc_failed(t, self.timing.shutdown_retry_s)
        elif out.purpose == "replica-state":
            self.disks.retry_at = t + self.timing.backoff(2)

    # ------------------------------------------------------------------ leadership
    def _sync(self, t: float) -> None:
        for led in self.leadership.sync(self.views.values(), t):
            view = self.views.get((led.topic, led.partition))
            if view is not None and view.hosted and view.leader_epoch > led.leader_epoch:
                self._maybe_replay_deposed(led, t)

    def _alter_partition_answer(self, out: Outgoing, response: AlterPartitionResponse, t: float) -> None:
        acked, missing = self.leadership.answered(out.proposals, response, out.version, t)
        for item in acked:
            granted = (item.leader, item.leader_epoch, item.partition_epoch, item.isr)
            self.events.append(PartitionAcked(self.epoch, out.version, item.proposal, *granted))
        if missing:
            self.events.append(
                ShapeProblem(ApiKey.ALTER_PARTITION, out.version, f"{len(missing)} partitions unanswered")
            )
        applied = len(acked) == len(out.proposals) and all(
            item.partition_epoch > item.proposal.partition_epoch for item in acked
        )
        if applied and self.replays.may_replay(t, 0.1):
            self.replays.plans.append(stale.resent_plan(out.version, out.body, self.epoch, out.proposals))

    # ------------------------------------------------------------------ controlled shutdown
    def ready_to_shut_down(self, t: float, excluded: frozenset[int] = frozenset()) -> bool:
        """Every partition it leads (with other replicas) has another eligible ISR member, not one of
        `excluded` (brokers about to fail)."""
        return self.leadership.successors_ready(self.followers, t, excluded)

    def begin_shutdown(self, via: str, t: float) -> None:
        if self.shutdown is not None or not self.lifecycle.registered:
            return
        self.shutdown = shutdown = Shutdown.begin(via, t)
        self.lifecycle.shutting_down = True
        self.lifecycle.want_shut_down = shutdown.by_heartbeat_only
        if shutdown.by_heartbeat_only:
            self.lifecycle.next_heartbeat = min(self.lifecycle.next_heartbeat, t)

    def _shutdown_answer(self, response: ControlledShutdownResponse, t: float) -> None:
        shutdown = self.shutdown
        if shutdown is None or not shutdown.rpc_answered(response, t, self.timing.shutdown_retry_s):
            return
        if shutdown.via == "rpc":
            self._finish_shutdown(t)
        else:
            self.lifecycle.want_shut_down = True
            self.lifecycle.next_heartbeat = min(self.lifecycle.next_heartbeat, t)

    def _finish_shutdown(self, t: float) -> None:
        self._end_shutdown(t)
        self.incarnation_over = True

    def _end_shutdown(self, finished: float | None) -> None:
        shutdown = self.shutdown
        if shutdown is None:
            return
        version = self.lifecycle.versions.get(ApiKey.CONTROLLED_SHUTDOWN, 0)
        self.events.append(shutdown.ended(self.epoch, version, finished))
        self.shutdown = None

    # ------------------------------------------------------------------ disks
    def fail_dir(self, index: int) -> None:
        """Log dir `index` fails: its hosted replicas go OFFLINE."""
        if self.lifecycle.registered:
            self.dirs_failed.add(index)
            self.disks.fail(index, self.views.values(), self._topic_id)
            self.lifecycle.offline_dirs = self.disks.offline_dir_ids

    def repair_dir(self, index: int, t: float) -> None:
        self.reported_offline = {r for r in self.reported_offline if dir_of(*r) != index}
        self.disks.repair(index, t)
        self.lifecycle.offline_dirs = self.disks.offline_dir_ids

    def _replica_state(self, new_state: int, replicas: tuple[Replica, ...]) -> Outgoing:
        version = self.lifecycle.versions.get(ApiKey.ALTER_REPLICA_STATE, 0)
        named = tuple(r for r in replicas if version == 0 or r[1] != ZERO_UUID)
        reason = "log dir failed" if new_state == OFFLINE else "log dir repaired"
        body = requests.alter_replica_state(version, self.broker_id, self.epoch, new_state, reason, named)
        return Outgoing(DATA, "replica-state", version, body, replicas=named)

    def _replica_state_answer(self, out: Outgoing, response: AlterReplicaStateResponse, t: float) -> None:
        pending = self.disks.pending[0] if self.disks.pending else None
        if pending is not None:
            found = {
                (topic.name if out.version == 0 else topic.topic_id, p.partition_index): p.error_code
                for topic in response.topics
                for p in topic.partitions
            }
            keys = [((name if out.version == 0 else topic_id), partition) for name, topic_id, partition in out.replicas]
            errors = (response.error_code, *(found.get(key, -1) for key in keys))
            replicas = tuple((name, partition) for name, _, partition in out.replicas)
            report = ReplicaStateAnswered(self.epoch, out.version, pending[0], self.disks.sent_at, replicas, errors)
            self.events.append(report)
            if pending[0] == OFFLINE and response.error_code == ErrorCode.NONE:
                answered = [p.error_code for topic in response.topics for p in topic.partitions]
                if answered and all(code == ErrorCode.NONE for code in answered):
                    self.reported_offline.update((name, partition) for name, _, partition in pending[1])
        if response.error_code in (ErrorCode.NONE, ErrorCode.STALE_BROKER_EPOCH, ErrorCode.UNKNOWN_REPLICA_STATE):
            self.disks.reported()
        else:
            self.disks.retry_at = t + self.timing.backoff(2)

    # ------------------------------------------------------------------ stale replays
    # ------------------------------------------------------------------ helpers
    def _tick_at_or_after(self, t: float) -> float:
        """The first of this broker's ticks at or after t: k * tick_s + its seeded phase."""
        offset = self.phase * self.timing.tick_s
        ticks = -(-(t - offset) // self.timing.tick_s)
        return float(ticks * self.timing.tick_s + offset)
