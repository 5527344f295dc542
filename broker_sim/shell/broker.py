"""One simulated broker in the shell: its incarnations, its two controller connections, its listener.

Rules:
- `run` lives for the whole fleet: it runs an incarnation (a fresh listener on a free port, a
  lifecycle loop and a data loop in one cancel scope), and when the incarnation ends (a crash, a
  finished or abandoned controlled shutdown) closes everything and starts the next after the
  downtime the fault asked for.
- The loops only move bytes: the model decides what to send and when (`next_lifecycle`,
  `next_data`) and takes every answer, failure and listener view. Network errors, timeouts and
  bad answers never escape a loop: they are counted (and a bad answer journalled) and the model
  retries on a fresh connection.
- The listener's accepted LeaderAndIsr/StopReplica bump `views_version` (the model re-reads the
  views), are counted, teach topic ids (v5+), and journal each newly accepted partition state
  (`StateObserved`, once per leader and partition epoch). The controller epochs the listener goes
  by are journalled too: each newer one it accepts (`ControllerEpochSeen`, the incarnation's first
  included) and every request it refuses whole for an older controller or broker epoch
  (`ControlRefused`, with a digest of the request and the connection it came on), so that a
  checker can hold that no broker acted on an older controller's request than one it had seen; and
  each (controller id, controller epoch) a control request came with, the first time
  (`ControlSenderSeen`), so that it can hold each epoch to its leader. So are the brokers' side of
  the control duties: each decided partition of a StopReplica (`StopObserved`), and
  each accepted LeaderAndIsr that is FULL or the incarnation's first of its controller epoch
  (`LeaderAndIsrObserved`).
- A control request names the destination's broker epoch where its version carries one
  (LeaderAndIsr v2+, StopReplica v1+; semantics.md: "Outbound requests carry ... the destination's
  broker epoch"): one that names none (-1, which the listener never refuses as stale) is a bad
  message of the controller, journalled as a bad answer.
- Both controller connections move through the fleet's controller list on their own (`connection`);
  each move is journalled (`ControllerSwitched`, channel "lifecycle" or "data") and counted.
- Heartbeat lateness (sent minus due) is measured at every heartbeat, except for heartbeats that
  fell due during an intended pause.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from broker_sim import journal
from broker_sim.model import versions
from broker_sim.model.broker import BrokerModel
from broker_sim.model.events import Outgoing
from broker_sim.model.lifecycle import Phase
from broker_sim.shell.listener import (
    TYPE_FULL,
    BrokerControlListener,
    decided_stops,
    flatten_states,
    request_digest,
    request_type,
)
from protocol.api_keys import ApiKey
from protocol.capture import INBOUND, Exchange
from protocol.error_codes import ErrorCode
from protocol.errors import DecodeError
from protocol.messages.leader_and_isr import LeaderAndIsrRequest, LeaderAndIsrResponse
from protocol.messages.stop_replica import StopReplicaRequest, StopReplicaResponse
from protocol.registry import peek_request
from protocol.spec import ZERO_UUID, Data

from .connection import CONNECTION_IDS, BadAnswer, ConnectionLost, ControllerConnection, OnSwitch
from .context import FleetContext
from .runtime import wall_ns
from .tls import LISTENER_PROTOCOL

CONTROL_NAMES: dict[int, str] = {ApiKey.LEADER_AND_ISR: "LeaderAndIsr", ApiKey.STOP_REPLICA: "StopReplica"}
#: the first version of each control request that carries the destination's broker epoch
BROKER_EPOCH_SINCE: dict[int, int] = {ApiKey.LEADER_AND_ISR: 2, ApiKey.STOP_REPLICA: 1}


class BrokerRunner:
    def __init__(self, ctx: FleetContext, model: BrokerModel) -> None:
        self.ctx = ctx
        self.model = model
        self.broker_id = model.broker_id
        capture = ctx.recorder.capture.add if ctx.recorder.capture is not None else None
        self.lifecycle_connection = ControllerConnection(
            ctx.controllers, f"broker-{self.broker_id}-lifecycle", capture, self._switched("lifecycle"), ctx.client_tls
        )
        self.data_connection = ControllerConnection(
            ctx.controllers, f"broker-{self.broker_id}-data", capture, self._switched("data"), ctx.client_tls
        )
        self.listener: BrokerControlListener | None = None
        self.controller_epoch = 0  # the newest the incarnation's listener accepted (journalled)
        self.views_version = 0
        self.downtime_s = 0.0
        self._scope: trio.CancelScope | None = None
        self._observed: dict[tuple[str, int], tuple[int, int]] = {}
        self._senders: set[tuple[int, int]] = set()  # (controller id, controller epoch) journalled
        self._lai_epochs: set[int] = set()  # controller epochs of the incarnation's journalled LeaderAndIsr
        self._wake_lifecycle = trio.Event()
        self._wake_data = trio.Event()
        self._inbound_ids: dict[str, int] = {}

    # ------------------------------------------------------------------ incarnations
    async def run(self) -> None:
        while True:
            await self._incarnation()
            await trio.sleep(self.downtime_s)

    def new_listener(self) -> BrokerControlListener:
        """The control listener of a new incarnation, wired to this runner's hooks."""
        self.listener = BrokerControlListener(
            self.broker_id,
            lambda: self.model.epoch,
            max_versions=versions.listener_max_versions(self.ctx.seed, self.broker_id),
            record_received=False,
            on_handled=self._handled,
            on_exchange=self._exchange if self.ctx.recorder.capture is not None else None,
            tls=self.ctx.listener_tls,
        )
        self._observed.clear()
        self._lai_epochs.clear()
        self.controller_epoch = 0
        return self.listener

    async def _incarnation(self) -> None:
        listener = self.new_listener()
        try:
            with trio.CancelScope() as scope:
                self._scope = scope
                async with trio.open_nursery() as nursery:
                    port = await nursery.start(listener.serve, self.ctx.listen_host, 0)
                    protocol = LISTENER_PROTOCOL[self.ctx.listener_tls is not None]
                    self.model.start(self.ctx.now(), self.ctx.listen_host, port, protocol)
                    nursery.start_soon(self._lifecycle_loop)
                    nursery.start_soon(self._data_loop)
        finally:
            self._scope = None
            with trio.CancelScope(shield=True):
                await self.lifecycle_connection.drop()
                await self.data_connection.drop()
            self.model.end_incarnation(self.ctx.now())
            self._record()

    def end_incarnation(self, downtime_s: float) -> bool:
        """Stop the running incarnation now (a crash); restart after `downtime_s`. False if none runs."""
        if self._scope is None:
            return False
        self.downtime_s = downtime_s
        self._scope.cancel()
        return True

    @property
    def running(self) -> bool:
        return self._scope is not None and self.model.running(self.ctx.now())

    def caught_up(self) -> bool:
        """Active and in the ISR of every partition it hosts (the rolling restart's wait)."""
        listener = self.listener
        if listener is None or not self.running or self.model.lifecycle.phase != Phase.ACTIVE:
            return False
        return all(self.broker_id in view.isr for view in listener.partitions.values() if view.hosted)

    def kick(self) -> None:
        """Something outside the loops changed the model (a fault): let both loops ask it again."""
        self._wake_lifecycle.set()
        self._wake_data.set()

    # ------------------------------------------------------------------ faults
    def begin_shutdown(self, via: str, downtime_s: float) -> None:
        self.downtime_s = downtime_s
        self.model.begin_shutdown(via, self.ctx.now())
        self.kick()

    async def pause(self, duration_s: float) -> None:
        """A GC pause: nothing is sent, and the listener answers nothing, for `duration_s`."""
        listener = self.listener
        gate = trio.Event()
        if listener is not None:
            listener.gate = gate
        now = self.ctx.now()
        self.model.pause(now + duration_s, now)
        try:
            await trio.sleep(duration_s)
        finally:
            gate.set()
            if listener is not None and listener.gate is gate:
                listener.gate = None

    async def drop_connections(self) -> None:
        await self.lifecycle_connection.drop()
        await self.data_connection.drop()

    async def fail_dir(self, index: int, duration_s: float) -> None:
        incarnation = self.model.incarnations
        self.model.fail_dir(index)
        self.kick()
        await trio.sleep(duration_s)
        if self.model.incarnations == incarnation:
            self.model.repair_dir(index, self.ctx.now())
            self.kick()

    # ------------------------------------------------------------------ loops
    async def _lifecycle_loop(self) -> None:
        model = self.model
        while True:
            t = self.ctx.now()
            out = model.next_lifecycle(t)
            if not isinstance(out, Outgoing):
                await self._sleep_until(out, "lifecycle")
                continue
            if out.purpose == "heartbeat":
                if out.due > model.resumed_at:
                    self.ctx.recorder.stats.heartbeat(max(0.0, (t - out.due) * 1000))
                model.lifecycle.heartbeat_sent(t)
                timeout = self.ctx.timing.heartbeat_timeout_s
            else:
                timeout = self.ctx.timing.request_timeout_s
            await self._call(out, self.lifecycle_connection, model.lifecycle_answered, model.lifecycle_failed, timeout)

    async def _data_loop(self) -> None:
        model = self.model
        while True:
            listener = self.listener
            assert listener is not None
            out = model.next_data(self.ctx.now(), listener.partitions, self.views_version)
            if not isinstance(out, Outgoing):
                await self._sleep_until(out, "data")
                continue
            timeout = self.ctx.timing.request_timeout_s
            await self._call(out, self.data_connection, model.data_answered, model.data_failed, timeout)
            if out.purpose == "shutdown":
                self._wake_lifecycle.set()  # a finished RPC may want a WantShutDown heartbeat now

    async def _sleep_until(self, t: float, loop: str) -> None:
        """Sleep until model time `t` or a kick, whichever comes first."""
        if self.model.incarnation_over:
            self.end_incarnation(self.downtime_s)
        wake = self._wake_lifecycle if loop == "lifecycle" else self._wake_data
        if not wake.is_set():
            with trio.move_on_at(self.ctx.deadline(t)):
                await wake.wait()
        if loop == "lifecycle":
            self._wake_lifecycle = trio.Event()
        else:
            self._wake_data = trio.Event()

    async def _call(
        self,
        out: Outgoing,
        connection: ControllerConnection,
        answered: Callable[[Outgoing, Data, float], None],
        failed: Callable[[Outgoing, float], None],
        timeout_s: float,
    ) -> None:
        recorder = self.ctx.recorder
        key = out.body.API.key
        sent = self.ctx.now()
        try:
            response = await connection.request(out.body, out.version, timeout_s)
        except ConnectionLost:
            recorder.lost(key)
            failed(out, self.ctx.now())
        except BadAnswer as exc:
            recorder.bad_answer(self.broker_id, key, out.version, connection.last_correlation_id, str(exc))
            failed(out, self.ctx.now())
        else:
            now = self.ctx.now()
            self.ctx.answered(now, response, connection.answered_by)
            recorder.answered(key, now - sent, response)
            answered(out, response, now)
        self._record(connection.last_correlation_id)

    def _record(self, correlation_id: int = 0) -> None:
        if self.model.events:
            self.ctx.recorder.events(self.broker_id, self.model.events, correlation_id)
            self.model.events.clear()

    # ------------------------------------------------------------------ listener hooks
    def _switched(self, channel: str) -> OnSwitch:
        def switched(before: str, after: str, reason: str, api_name: str, detail: str) -> None:
            self.ctx.recorder.controller_switched(self.broker_id, channel, before, after, reason, api_name, detail)

        return switched

    def _handled(self, api_key: int, version: int, request: Data, response: Data) -> None:
        self.views_version += 1
        name = CONTROL_NAMES.get(api_key)
        if name is None:
            return
        self.ctx.recorder.stats.control_requests_by_api[name] += 1
        if isinstance(request, LeaderAndIsrRequest | StopReplicaRequest):
            if request.broker_epoch == -1 and version >= BROKER_EPOCH_SINCE[api_key]:
                reason = f"{name} v{version} names no broker epoch (-1), not the destination's"
                self.ctx.recorder.bad_answer(self.broker_id, api_key, version, 0, reason)
            self._controller_epochs(name, version, request, getattr(response, "error_code", 0))
            self._sender(name, request, getattr(response, "error_code", 0))
        if (
            isinstance(request, LeaderAndIsrRequest)
            and isinstance(response, LeaderAndIsrResponse)
            and response.error_code == ErrorCode.NONE
        ):
            self._observe(request, version)
            self._observe_leader_and_isr(request, version)
        elif isinstance(request, StopReplicaRequest) and isinstance(response, StopReplicaResponse):
            self._observe_stops(request, version, response)

    def _observe_leader_and_isr(self, request: LeaderAndIsrRequest, version: int) -> None:
        """Journal an accepted LeaderAndIsr that is FULL, or the incarnation's first of its controller epoch."""
        kind = request_type(request, version)
        if kind != TYPE_FULL and request.controller_epoch in self._lai_epochs:
            return
        self._lai_epochs.add(request.controller_epoch)
        count = len(request.ungrouped_partition_states) + sum(len(t.partition_states) for t in request.topic_states)
        recorder = self.ctx.recorder
        recorder.write(
            journal.LeaderAndIsrObserved(
                recorder.now_ns(), self.broker_id, self.model.epoch, version, request.controller_id,
                request.controller_epoch, kind, count,
            )
        )  # fmt: skip

    def _observe_stops(self, request: StopReplicaRequest, version: int, response: StopReplicaResponse) -> None:
        """Journal each partition of a StopReplica the listener decided (not refused whole)."""
        recorder = self.ctx.recorder
        for stop, error in decided_stops(request, version, response):
            recorder.write(
                journal.StopObserved(
                    recorder.now_ns(), self.broker_id, self.model.epoch, version, request.controller_epoch,
                    stop.topic_name, stop.partition, stop.leader_epoch, stop.delete, error,
                )
            )  # fmt: skip

    def _controller_epochs(
        self, name: str, version: int, request: LeaderAndIsrRequest | StopReplicaRequest, error: int
    ) -> None:
        """Journal a refusal for an older controller or broker epoch, or a newer controller epoch accepted."""
        recorder = self.ctx.recorder
        if error in (ErrorCode.STALE_CONTROLLER_EPOCH, ErrorCode.STALE_BROKER_EPOCH):
            newest = self.listener.controller_epoch if self.listener is not None else self.controller_epoch
            recorder.write(
                journal.ControlRefused(
                    wall_ns=recorder.now_ns(),
                    broker=self.broker_id,
                    broker_epoch=self.model.epoch,
                    api=name,
                    api_version=version,
                    request_broker_epoch=request.broker_epoch,
                    controller_epoch=request.controller_epoch,
                    newest_controller_epoch=newest,
                    error=error,
                    digest=request_digest(request),
                    connection=self.listener.serving_connection if self.listener is not None else 0,
                )
            )
        elif error == ErrorCode.NONE and request.controller_epoch > self.controller_epoch:
            recorder.write(
                journal.ControllerEpochSeen(
                    wall_ns=recorder.now_ns(),
                    broker=self.broker_id,
                    broker_epoch=self.model.epoch,
                    api=name,
                    controller_epoch=request.controller_epoch,
                    previous_controller_epoch=self.controller_epoch,
                )
            )
            self.controller_epoch = request.controller_epoch

    def _sender(self, name: str, request: LeaderAndIsrRequest | StopReplicaRequest, error: int) -> None:
        """Journal the (controller id, controller epoch) of a control request not seen before."""
        pair = (request.controller_id, request.controller_epoch)
        if pair in self._senders:
            return
        self._senders.add(pair)
        recorder = self.ctx.recorder
        recorder.write(journal.ControlSenderSeen(recorder.now_ns(), self.broker_id, name, *pair, error))

    def _observe(self, request: LeaderAndIsrRequest, version: int) -> None:
        listener = self.listener
        if listener is None:
            return
        for topic, topic_id, state in flatten_states(request, version):
            if topic_id != ZERO_UUID:
                self.ctx.topic_ids[topic] = topic_id
            key = (topic, state.partition_index)
            view = listener.partitions.get(key)
            epochs = (state.leader_epoch, state.partition_epoch)
            if view is None or view.deleted or (view.leader_epoch, view.partition_epoch) != epochs:
                continue
            if self._observed.get(key) == epochs:
                continue
            self._observed[key] = epochs
            self.ctx.recorder.write(
                journal.StateObserved(
                    wall_ns=wall_ns(),
                    broker=self.broker_id,
                    controller_epoch=request.controller_epoch,
                    topic_id=str(self.ctx.topic_ids.get(topic, topic_id)),
                    partition=state.partition_index,
                    leader=state.leader,
                    leader_epoch=state.leader_epoch,
                    partition_epoch=state.partition_epoch,
                    isr=list(state.isr),
                    replicas=list(state.replicas),
                )
            )

    def _exchange(self, peer: str, payload: bytes, reply: bytes | None, received_ns: int) -> None:
        capture = self.ctx.recorder.capture
        if capture is None:
            return
        try:
            key, version, correlation_id = peek_request(payload)
        except DecodeError:
            return
        connection_id = self._inbound_ids.setdefault(peer, next(CONNECTION_IDS))
        capture.add(
            Exchange(
                received_ns,
                wall_ns(),
                INBOUND,
                connection_id,
                peer,
                key,
                version,
                correlation_id or 0,
                payload,
                None if reply is None else reply[4:],
            )
        )
