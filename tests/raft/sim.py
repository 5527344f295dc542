"""A simulated network of Raft nodes (controller.raft) with faults, for the property tests.

Rules:
- Discrete events on one clock (integer ms), every random choice from the run's seed: message
  delays (reordering), loss, duplication, partitions (a cut pair drops what it carries), crashes
  and restarts, client appends at the leader, flushes after a random delay, snapshots.
- Each node executes its actions in order. A `PersistQuorumState` takes a random time during
  which the rest waits; a crash loses what is not yet persisted or flushed (the quorum-state
  file and the flushed log survive, plus snapshots), and every message still queued behind it.
- A request reaches its destination only while both ends keep the incarnation they had when it
  was sent (a restart closes the connections); an answer goes back to the incarnation that asked.
- Some crashes come at risky moments: right after a node granted a vote, or led with a high
  watermark announced and part of its log unflushed.
- Every action is checked as it is executed: Raft's properties (tests/raft/invariants.py) and
  the rules of Kafka's protocol that they rest on: a vote goes only to a log at least as up to
  date and leaves the node only once it is on disk, a fetch offset is flushed, a leader commits
  nothing before its epoch's first batch, the core's view of its log is the log.
- After `chaos_ms` the network heals, crashed nodes restart, and a leader must be elected and
  commit a new entry on every voter within `liveness_ms`.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from collections.abc import Callable

from controller.raft import (
    Action,
    AppendBatches,
    Appended,
    Batch,
    BecomeLeader,
    Event,
    HighWatermark,
    InstallSnapshot,
    LeaderChanged,
    LogFlushed,
    NodeId,
    OffsetAndEpoch,
    PersistQuorumState,
    RaftConfig,
    RaftNode,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    SendRequest,
    SendResponse,
    SnapshotCreated,
    SnapshotInstalled,
    StopLeading,
    Tick,
    TruncateTo,
)
from controller.raft.messages import (
    FetchRequest,
    FetchResponse,
    FetchSnapshotResponse,
    Request,
    Response,
    VoteRequest,
    VoteResponse,
)

from .invariants import Checker, Entry, Violation
from .simnode import TIMING, Faults, Report, SimNode

#: the kinds of scheduled events
DELIVER, TICK, FLUSH, RESUME, INSTALLED, CLIENT, CRASH, RESTART, PARTITION, HEAL, SNAPSHOT, LIVENESS, FAILED, SUDDEN = (
    range(14)
)


class Simulation:
    def __init__(
        self,
        seed: int,
        voters: int = 3,
        observers: int = 0,
        chaos_ms: int = 1500,
        liveness_ms: int = 2500,
        faults: Faults | None = None,
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.faults = faults if faults is not None else Faults()
        self.loss, self.duplicate = self.faults.loss, self.faults.duplicate
        self.chaos_ms, self.end_ms = chaos_ms, chaos_ms + liveness_ms
        ids = [NodeId(i) for i in range(1, voters + observers + 1)]
        voter_set = frozenset(ids[:voters])
        self.voters = voter_set
        self.nodes = {
            node_id: SimNode(node_id, RaftConfig(node_id, voter_set, "sim-cluster", **TIMING)) for node_id in ids
        }
        self.checker = Checker()
        self.stats: Counter[str] = Counter()
        self.now = 0
        self._queue: list[tuple[int, int, int, tuple[object, ...]]] = []
        self._seq = 0
        self.cut: set[frozenset[NodeId]] = set()
        self.partition_id = 0
        self.origins: dict[tuple[NodeId, NodeId, int], int] = {}
        self.pre_votes: dict[tuple[NodeId, NodeId, int], bool] = {}
        self.marker: tuple[int, Entry] | None = None
        self.converged_at: int | None = None
        self.tokens = 0
        #: (time, node, "lead" or "stop", epoch), as the nodes executed BecomeLeader / StopLeading
        self.history: list[tuple[int, NodeId, str, int]] = []

    # ------------------------------------------------------------------ the loop
    def push(self, at: int, kind: int, *data: object) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (at, self._seq, kind, data))

    def start(self) -> None:
        """Start every node and schedule the run's faults, client appends and liveness checks."""
        for node in self.nodes.values():
            self.restart(node)
        faults = self.faults
        self.push(1, CLIENT)
        for kind, every in ((CRASH, faults.crash_every_ms), (PARTITION, faults.partition_every_ms)):
            if every is not None:
                self.push(self._gap(every), kind)
        if faults.snapshot_every_ms is not None:
            self.push(self._gap(faults.snapshot_every_ms), SNAPSHOT)
        self.push(self.chaos_ms, LIVENESS)
        self._handlers: dict[int, Callable[..., None]] = {
            DELIVER: self._deliver,
            TICK: self._tick,
            FLUSH: self._flush,
            RESUME: self._resume,
            INSTALLED: self._installed,
            CLIENT: self._client,
            CRASH: self._crash_some,
            RESTART: self._restart_event,
            PARTITION: self._partition,
            HEAL: self._heal,
            SNAPSHOT: self._snapshot,
            LIVENESS: self._liveness,
            FAILED: self._failed,
            SUDDEN: self._sudden_crash,
        }

    def run_until(self, end_ms: int) -> None:
        """Process every event up to `end_ms` (or until the liveness check is met)."""
        while self._queue and self._queue[0][0] <= end_ms and self.converged_at is None:
            at, _, kind, data = heapq.heappop(self._queue)
            self.now = at
            self._handlers[kind](*data)
        self.now = max(self.now, end_ms)

    def run(self) -> Report:
        self.start()
        self.run_until(self.end_ms)
        if self.converged_at is None:
            raise Violation(f"seed {self.seed}: no leader committed a new entry on every voter by {self.end_ms} ms")
        self.checker.logs_match({node.node_id: node.log for node in self.nodes.values()})
        return Report(
            self.seed,
            self.stats,
            self.converged_at,
            max(self.checker.leaders, default=0),
            len(self.checker.committed),
        )

    def _gap(self, mean: int) -> int:
        return self.now + 1 + int(self.rng.expovariate(1 / mean))

    def call(self, node: SimNode, event: Event) -> list[Action]:
        assert node.core is not None
        if isinstance(event, RequestReceived) and isinstance(event.request, VoteRequest):
            voter_end = node.core.log.end
        actions = node.core.handle(self.now, event)
        self.execute(node, actions)
        if isinstance(event, RequestReceived) and isinstance(event.request, VoteRequest):
            self._check_vote(node, event.request, voter_end, actions)
        return actions

    def _check_vote(
        self, node: SimNode, request: VoteRequest, voter_end: OffsetAndEpoch, actions: list[Action]
    ) -> None:
        """A (pre-)vote is granted only to a candidate whose log is at least as up to date."""
        for action in actions:
            if isinstance(action, SendResponse) and isinstance(action.response, VoteResponse):
                candidate_end = OffsetAndEpoch(request.last_offset, request.last_offset_epoch)
                if action.response.vote_granted and not candidate_end.at_least(voter_end):
                    raise Violation(f"node {node.node_id} granted {request} with its log at {voter_end}")
                if action.response.vote_granted:
                    self.stats["pre-votes granted" if request.pre_vote else "votes granted"] += 1
                    if not request.pre_vote:
                        self._risky_moment(node)

    def execute(self, node: SimNode, actions: list[Action] | tuple[Action, ...]) -> None:
        core = node.core
        assert core is not None
        node.pending.extend(actions)
        self._drain(node)
        if core.high_watermark is not None and core.high_watermark > core.log.end_offset:
            raise Violation(f"node {node.node_id}: high watermark {core.high_watermark} > log end")
        if not node.pending and node.persisting is None:
            view = core.log
            if (view.start_offset, view.end_offset) != (node.log.start, node.log.end):
                raise Violation(f"node {node.node_id}: the core's log {view} is not the log {node.log.end}")
        wakeup = core.next_wakeup_ms(self.now)
        if wakeup is not None:
            wakeup = max(wakeup, self.now + 1)
            if node.tick_at is None or node.tick_at <= self.now or wakeup < node.tick_at:
                node.tick_at = wakeup
                self.push(wakeup, TICK, node.node_id, node.incarnation, wakeup)

    # ------------------------------------------------------------------ actions
    def _drain(self, node: SimNode) -> None:
        while node.pending and node.persisting is None:
            action = node.pending.popleft()
            if isinstance(action, PersistQuorumState):
                delay = self.rng.randint(0, 3)
                if delay == 0:
                    node.election = action.election
                else:
                    node.persisting = action.election
                    self.push(self.now + delay, RESUME, node.node_id, node.incarnation)
            elif isinstance(action, SendRequest):
                self._send_request(node, action.destination, action.correlation_id, action.request)
            elif isinstance(action, SendResponse):
                self._send_response(node, action.destination, action.correlation_id, action.response)
            elif isinstance(action, AppendBatches):
                first = node.log.end
                for batch in action.batches:
                    node.log.append(batch)
                self.checker.appended(node.node_id, node.log, first)
                self._schedule_flush(node)
            elif isinstance(action, TruncateTo):
                self.checker.truncating(node.node_id, node.log, action.end_offset)
                node.log.truncate(action.end_offset)
                self.stats["truncations"] += 1
            elif isinstance(action, InstallSnapshot):
                self.push(self.now + self.rng.randint(1, 10), INSTALLED, node.node_id, node.incarnation, action)
            elif isinstance(action, BecomeLeader):
                assert node.leading_epoch is None, f"node {node.node_id} leads {action.epoch} before leaving"
                self.checker.became_leader(node.node_id, action.epoch, node.log)
                node.leading_epoch, node.epoch_start = action.epoch, action.epoch_start_offset
                self.history.append((self.now, node.node_id, "lead", action.epoch))
                self.stats["elections won"] += 1
            elif isinstance(action, StopLeading):
                assert node.leading_epoch == action.epoch, (node.leading_epoch, action)
                node.leading_epoch = None
                self.history.append((self.now, node.node_id, "stop", action.epoch))
                self.stats["leaderships lost"] += 1
            elif isinstance(action, HighWatermark):
                if node.leading_epoch is not None and action.offset <= node.epoch_start:
                    raise Violation(f"leader {node.node_id} commits {action.offset} before its epoch's first batch")
                self.checker.high_watermark(node.node_id, node.log, node.hw, action.offset, node.leading_epoch)
                node.hw = action.offset
                if node.leading_epoch is not None and node.log.flushed_end < node.log.end:
                    self._risky_moment(node)
            else:
                assert isinstance(action, LeaderChanged)

    def _schedule_flush(self, node: SimNode) -> None:
        if not node.flush_due:
            node.flush_due = True
            slow = self.rng.random() < self.faults.slow_flush
            delay = self.rng.randint(15, 60) if slow else self.rng.randint(1, 12)
            self.push(self.now + delay, FLUSH, node.node_id, node.incarnation)

    def _risky_moment(self, node: SimNode) -> None:
        if self.now < self.chaos_ms and self.rng.random() < self.faults.sudden_crash:
            self.push(self.now + self.rng.randint(0, 3), SUDDEN, node.node_id, node.incarnation)

    def _sudden_crash(self, node_id: NodeId, incarnation: int) -> None:
        node = self._alive(node_id, incarnation)
        if node is not None:
            self.crash(node)
            self.stats["sudden crashes"] += 1
            self.push(self.now + self.rng.randint(1, 30), RESTART, node.node_id, node.incarnation)

    # ------------------------------------------------------------------ the network
    def _send_request(self, node: SimNode, destination: NodeId, correlation_id: int, request: Request) -> None:
        if isinstance(request, FetchRequest) and request.fetch_offset > node.log.flushed_end:
            # the leader counts a voter's fetch offset as durable on it
            raise Violation(
                f"node {node.node_id} fetches from {request.fetch_offset}, flushed to {node.log.flushed_end}"
            )
        target = self.nodes[destination]
        if target.core is None:
            # connection refused: the sender hears of it
            self.push(self.now + 1, FAILED, node.node_id, node.incarnation, destination, correlation_id)
            return
        self._transmit(
            node.node_id,
            node.incarnation,
            destination,
            target.incarnation,
            RequestReceived(node.node_id, correlation_id, request),
        )

    def _send_response(self, node: SimNode, destination: NodeId, correlation_id: int, response: Response) -> None:
        key = (node.node_id, destination, correlation_id)
        if isinstance(response, VoteResponse) and response.vote_granted and not self.pre_votes.get(key, True):
            # a vote leaves only once it is durable
            election = node.election
            if election is None or (election.epoch, election.voted_id) != (response.leader_epoch, destination):
                raise Violation(f"node {node.node_id} votes for {destination}; on disk: {election}")
        incarnation = self.origins.get((node.node_id, destination, correlation_id))
        if incarnation is None:
            return  # the asker's connection is gone
        if isinstance(response, FetchResponse) and response.records_from_offset is not None:
            records = node.log.batches_from(response.records_from_offset)
            response = FetchResponse(
                response.error,
                response.leader_id,
                response.leader_epoch,
                response.high_watermark,
                response.log_start_offset,
                response.diverging_epoch,
                response.snapshot_id,
                response.records_from_offset,
                records,
            )
        elif isinstance(response, FetchSnapshotResponse) and response.snapshot_id is not None:
            assert response.snapshot_id == node.log.snapshot
            response = FetchSnapshotResponse(
                response.error,
                response.leader_id,
                response.leader_epoch,
                response.snapshot_id,
                node.log.snapshot_entries,
            )
        self._transmit(
            node.node_id,
            node.incarnation,
            destination,
            incarnation,
            ResponseReceived(node.node_id, correlation_id, response),
        )

    def _transmit(
        self,
        source: NodeId,
        source_inc: int,
        destination: NodeId,
        dest_inc: int,
        message: RequestReceived | ResponseReceived,
    ) -> None:
        if self.rng.random() < self.loss:
            self.stats["lost"] += 1
            return
        copies = 2 if self.rng.random() < self.duplicate else 1
        for _ in range(copies):
            delay = self.rng.randint(1, self.faults.max_delay_ms)
            self.push(self.now + delay, DELIVER, source, source_inc, destination, dest_inc, message)

    def _deliver(
        self,
        source: NodeId,
        source_inc: int,
        destination: NodeId,
        dest_inc: int,
        message: RequestReceived | ResponseReceived,
    ) -> None:
        target, sender = self.nodes[destination], self.nodes[source]
        if target.core is None or target.incarnation != dest_inc:
            return
        if frozenset((source, destination)) in self.cut:
            self.stats["cut"] += 1
            return
        if isinstance(message, RequestReceived):
            if sender.incarnation != source_inc:
                return  # the asker restarted: its connection is closed
            self.origins[(destination, source, message.correlation_id)] = source_inc
            if isinstance(message.request, VoteRequest):
                self.pre_votes[(destination, source, message.correlation_id)] = message.request.pre_vote
        self.call(target, message)

    def _failed(self, node_id: NodeId, incarnation: int, destination: NodeId, correlation_id: int) -> None:
        node = self.nodes[node_id]
        if node.core is not None and node.incarnation == incarnation:
            self.call(node, RequestFailed(destination, correlation_id))

    # ------------------------------------------------------------------ node events
    def _alive(self, node_id: NodeId, incarnation: int) -> SimNode | None:
        node = self.nodes[node_id]
        return node if node.core is not None and node.incarnation == incarnation else None

    def _tick(self, node_id: NodeId, incarnation: int, at: int) -> None:
        node = self._alive(node_id, incarnation)
        if node is not None and node.tick_at == at:
            node.tick_at = None
            self.call(node, Tick())

    def _flush(self, node_id: NodeId, incarnation: int) -> None:
        node = self._alive(node_id, incarnation)
        if node is not None:
            node.flush_due = False
            node.log.flushed_end = node.log.end
            self.call(node, LogFlushed(node.log.end))

    def _resume(self, node_id: NodeId, incarnation: int) -> None:
        node = self._alive(node_id, incarnation)
        if node is not None:
            node.election, node.persisting = node.persisting, None
            self.execute(node, ())

    def _installed(self, node_id: NodeId, incarnation: int, action: InstallSnapshot) -> None:
        node = self._alive(node_id, incarnation)
        if node is not None:
            entries = action.payload
            assert isinstance(entries, tuple)
            node.log.install(action.snapshot_id, entries)
            self.checker.snapshot_installed(node.node_id, node.log)
            self.stats["snapshots installed"] += 1
            self.call(node, SnapshotInstalled(action.snapshot_id))

    def crash(self, node: SimNode) -> None:
        node.core = None
        node.incarnation += 1
        node.pending.clear()
        node.persisting = None
        node.flush_due = False
        node.log.crash()
        node.hw = node.leading_epoch = node.tick_at = None
        for key in [key for key in self.origins if key[1] == node.node_id]:
            del self.origins[key]
        self.stats["crashes"] += 1

    def restart(self, node: SimNode) -> None:
        rng = random.Random(f"{self.seed}:{node.node_id}:{node.incarnation}")
        node.core = RaftNode(node.config, rng, node.election, node.log.view())
        self.execute(node, node.core.start(self.now))

    def _crash_some(self) -> None:
        if self.now >= self.chaos_ms:
            return
        live = [node for node in self.nodes.values() if node.core is not None]
        leaders = self.leaders()
        if leaders and self.rng.random() < self.faults.leader_bias:
            live = leaders
        if live:
            node = self.rng.choice(live)
            self.crash(node)
            self.push(self.now + self.rng.randint(20, 300), RESTART, node.node_id, node.incarnation)
        assert self.faults.crash_every_ms is not None
        self.push(self._gap(self.faults.crash_every_ms), CRASH)

    def _restart_event(self, node_id: NodeId, incarnation: int) -> None:
        node = self.nodes[node_id]
        if node.core is None and node.incarnation == incarnation:
            self.restart(node)

    def _partition(self) -> None:
        if self.now >= self.chaos_ms:
            return
        ids = sorted(self.nodes)
        self.rng.shuffle(ids)
        leaders = self.leaders()
        if leaders and self.rng.random() < self.faults.leader_bias:
            ids.remove(leaders[0].node_id)
            ids.insert(0, leaders[0].node_id)  # the leader on the smaller side
        split = self.rng.randint(1, len(ids) // 2)
        side, rest = ids[:split], ids[split:]
        self.cut = {frozenset((a, b)) for a in side for b in rest}
        self.partition_id += 1
        self.push(self.now + self.rng.randint(50, 400), HEAL, self.partition_id)
        assert self.faults.partition_every_ms is not None
        self.push(self._gap(self.faults.partition_every_ms), PARTITION)
        self.stats["partitions"] += 1

    def _heal(self, partition_id: int) -> None:
        if partition_id == self.partition_id:
            self.cut = set()

    # ------------------------------------------------------------------ the layer above
    def leaders(self) -> list[SimNode]:
        return [node for node in self.nodes.values() if node.core is not None and node.core.is_leader]

    def client_append(self, node: SimNode) -> Batch | None:
        core = node.core
        assert core is not None
        self.tokens += 1
        count = self.rng.randint(1, 3)
        payload = tuple(("client", self.tokens, index) for index in range(count))
        result = core.append(self.now, core.epoch, count, payload)
        if not isinstance(result, Appended):
            return None
        self.execute(node, result.actions)
        self.stats["appends"] += 1
        self.stats["records appended"] += count
        return result.batch

    def _client(self) -> None:
        if self.now >= self.chaos_ms:
            return
        leaders = self.leaders()
        if leaders:
            self.client_append(self.rng.choice(leaders))
        followers = [node for node in self.nodes.values() if node.core is not None and not node.core.is_leader]
        if followers and self.rng.random() < 0.05:
            core = self.rng.choice(followers).core
            assert core is not None
            refused = core.append(self.now, core.epoch, 1, ("refused",))
            assert not isinstance(refused, Appended), "a non-leader accepted an append"
        self.push(self.now + self.rng.randint(1, 2 * self.faults.append_every_ms), CLIENT)

    def _snapshot(self) -> None:
        if self.now >= self.chaos_ms:
            return
        candidates = [
            node
            for node in self.nodes.values()
            if node.core is not None
            and not node.pending
            and node.persisting is None
            and node.hw is not None
            and node.hw - node.log.start >= 4
        ]
        if candidates:
            node = self.rng.choice(candidates)
            assert node.hw is not None
            snapshot = node.log.take_snapshot(node.hw)
            self.call(node, SnapshotCreated(snapshot))
            self.stats["snapshots taken"] += 1
        assert self.faults.snapshot_every_ms is not None
        self.push(self._gap(self.faults.snapshot_every_ms), SNAPSHOT)

    # ------------------------------------------------------------------ liveness
    def _liveness(self) -> None:
        if self.now == self.chaos_ms:
            self.cut = set()
            self.loss = self.duplicate = 0.0
            for node in self.nodes.values():
                if node.core is None:
                    self.restart(node)
        self.push(self.now + 10, LIVENESS)
        leaders = self.leaders()
        if len(leaders) != 1:
            return
        leader = leaders[0]
        assert leader.core is not None
        if self.marker is not None:
            offset, entry = self.marker
            committed = self.checker.committed
            if offset < len(committed) and committed[offset] == entry:
                if all((self.nodes[v].hw or 0) > offset for v in self.voters):
                    self.converged_at = self.now
                return
            if leader.log.end > offset and leader.log.entry(offset) == entry:
                return  # appended by this leader, not committed yet
        batch = self.client_append(leader)
        if batch is not None:
            assert isinstance(batch.payload, tuple)
            self.marker = (batch.last_offset, (batch.epoch, batch.payload[-1]))


def run(seed: int, voters: int = 3, observers: int = 0, **kwargs: object) -> Report:
    return Simulation(seed, voters, observers, **kwargs).run()  # type: ignore[arg-type]
