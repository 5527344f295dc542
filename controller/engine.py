"""The controller core bound to its metadata log: start-up, staging, group commit, snapshots.

Rules:
- Start-up is replay: the newest valid snapshot, then every record of the log after it; then a
  LeaderChange control record opens the new controller epoch (previous epoch + 1), which every
  later batch carries and every control request names. On a log without a metadata record, a
  Kafka-formatted directory's `bootstrap.checkpoint` records follow it (`log.bootstrap`).
- Decisions are staged by `controller.staging`; the one commit path (the writer's): `commit`
  takes every batch staged since the last with the control orders they call for and encodes them
  (one record batch each, atomic); `write` appends them to the local log with one write and one
  fsync (one of each per segment when the commit crosses a roll); they are committed once the
  commit quorum holds them. A failed append leaves the engine unusable: the in-memory state is
  ahead of the disk, and only a restart's recovery can reconcile them.
- Snapshots and retention: `controller.engine_snapshots`.
- The shell reads the engine, never through it: the daemon and the CLI use its methods, not its
  log or its core's state (/state and the metrics: `freeze`, `counts`, `committed_isr_changes`,
  `log_sizes`).
- Metadata transactions (KIP-868): an operation of several batches stages a BeginTransactionRecord
  batch first and an EndTransactionRecord batch last (`ops.batches.in_transaction`). While one is
  open, its control orders are held (a `commit` carries none): brokers hear of it only once the
  End is staged, so no broker ever acts on leader epochs that a crash before the End would take
  back (start-up aborts such a transaction, and its epochs are handed out again). An operation
  that fails inside its transaction leaves the engine unusable (Kafka's controller resigns on
  such a fault): the in-memory state holds part of it, and only a restart's replay, which aborts
  the open transaction, reconciles state and log. No snapshot is taken inside a transaction.
- Authorization: `load` takes the authorization options (`authorizer`: None or
  "standard", `super_users`, `allow_everyone_if_no_acl_found`; checked by
  `ops.authorization.authorizer_config`, a ValueError naming what is wrong); none: no authorizer,
  nothing checked. `decide` takes who asks (`context`, a `RequestContext`; anonymous by default);
  `authorizer` is the authorizer in force, with every ACL replayed (a standby's too), for the
  checks the shell makes itself (`ops.authorization.authorize_api` for the quorum's RPCs);
  `take_denials` hands the shell what was refused since the last call. The ACL snapshot is
  brought up to date at the end of every replay (`_load_snapshot`, `catch_up`), so a log with
  ACL records the authorizer refuses stops start-up there.
- `committed_isr_changes` counts a partition change once it is durable, never when staged: the
  core's running totals are noted at the end of each staged batch that changed them, and the
  newest note at or below the log's durable end is what was committed. Changes replayed at
  start-up are history, not counted: the counts start at zero with the process, as Kafka's meters.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from protocol.records.batch_writer import PreparedAppend
from protocol.records.metadata import AbortTransactionRecord, BeginTransactionRecord, EndTransactionRecord
from protocol.records.transactions import MARKERS as TRANSACTION_MARKERS
from protocol.records.transactions import TransactionReplay
from protocol.spec import Data

from .auth.authorizer import Authorizer
from .control.orders import BrokerTarget, ControlOrder, OutboundCollector, full_state_orders
from .core import ClusterCounts, ControllerCore
from .engine_snapshots import SnapshotMethods
from .log import LogEntry, LogError, LogSizes, MetadataLog
from .log.bootstrap import BOOTSTRAP_TRANSACTION, read_bootstrap
from .log.retention import DEFAULT_RETENTION_BYTES
from .log.store import DEFAULT_SEGMENT_BYTES
from .ops.authorization import Denial, authorizer_config
from .runtime import monotonic_ns, wall_ms
from .slices import SLICE_SECONDS, Done, Slices, Work, finish, paced
from .staging import REPLAY_SLICE_RECORDS, NotActiveError, StagingMethods
from .startup import StartupReport, leader_change, load_snapshot, replay_framing, replay_whole_log
from .state.controller_state import ControllerConfig, RecordAndVersion
from .state.frozen import FrozenState
from .state.replication import IsrChanges

DEFAULT_SNAPSHOT_BYTES = 20 * 1024 * 1024
#: the reason of the AbortTransactionRecord that closes a transaction a previous controller left
#: open (Kafka's words)
FAILOVER_ABORT_REASON = "Controller failover"
__all__ = ["FAILOVER_ABORT_REASON", "REPLAY_SLICE_RECORDS", "Commit", "ControllerEngine", "NotActiveError"]


class ControllerEngine(StagingMethods, SnapshotMethods):
    def __init__(
        self,
        core: ControllerCore,
        log: MetadataLog,
        *,
        snapshot_bytes: int,
        metadata_retention_bytes: int,
        report: StartupReport,
    ) -> None:
        self.core = core
        self.log = log
        self.snapshot_bytes = snapshot_bytes
        self.metadata_retention_bytes = metadata_retention_bytes
        self.startup = report
        self._staged: list[Sequence[RecordAndVersion]] = []
        self._next_offset = log.next_offset
        self._taken_offset = log.next_offset  # where the staged batches not yet taken begin
        self.slice_seconds = SLICE_SECONDS  # how long paced work runs before it yields (0: always)
        #: staged records past which an operation in steps asks, between batches, to be committed:
        #: one operation limit's worth, so a long operation's memory is bounded by its own batches
        self.commit_records = core.config.max_records_per_operation
        self._broken: str | None = None
        #: the metadata transaction staged and not yet ended: (its Begin's offset, its name)
        self._transaction: tuple[int, str | None] | None = None
        self._orders = OutboundCollector(core.state)
        #: the ISR totals replayed at start-up (history: `committed_isr_changes` counts from here)
        self._isr_start = core.isr_changes()
        #: (end offset, the core's ISR totals after the staged batch ending there), oldest first,
        #: noted only when the totals changed; the first is always durable (`_committed_isr`)
        self._isr_marks: deque[tuple[int, IsrChanges]] = deque([(log.next_offset, self._isr_start)])
        #: the next log offset to replay (`catch_up`): the state holds everything below it
        self._applied = report.snapshot.end_offset if report.snapshot is not None else log.log_start_offset
        #: metadata transactions seen by `catch_up` (records held until their End)
        self._transactions: TransactionReplay[LogEntry] = TransactionReplay(replay_framing)
        #: metadata records replayed (snapshot and log; control records are not)
        self._data_records = report.snapshot_records
        #: the active controller (`activate`), else a standby that decides nothing
        self.active = False
        #: counts every `activate` and `reload`: work decided (or taken for a commit) under one
        #: term is abandoned under another (its state is gone; its epoch may be over)
        self.term = 0

    @classmethod
    def load(
        cls,
        data_dir: Path,
        *,
        config: ControllerConfig | None = None,
        cluster_id: str | None = None,
        node_id: int = 1,
        session_timeout_ms: int = 9000,
        host: str = "127.0.0.1",
        port: int = 9093,
        repair: bool = False,
        fsync: bool = True,
        snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        metadata_retention_bytes: int = DEFAULT_RETENTION_BYTES,
        max_records_per_operation: int = ControllerConfig.max_records_per_operation,
        default_partitions: int = ControllerConfig.default_partitions,
        default_replication_factor: int = ControllerConfig.default_replication_factor,
        rng: random.Random | None = None,
        authorizer: str | None = None,
        super_users: str | None = None,
        allow_everyone_if_no_acl_found: bool = False,
    ) -> ControllerEngine:
        """Open (or format) the data dir and load its newest snapshot: a standby, its state the
        snapshot's. `catch_up` replays the log after it up to an offset (a standby replays only
        what is committed), `activate` makes it the active controller of the epoch it replayed
        last; `start` does all three for a single voter, whose whole log is committed.

        Segments roll at `segment_bytes` (metadata.log.segment.bytes); retention keeps segments
        and snapshots to `metadata_retention_bytes` (metadata.max.retention.bytes). `authorizer`,
        `super_users`, `allow_everyone_if_no_acl_found`: the module's rules; these and the
        ControllerConfig fields are `config`'s when a config is given."""
        if metadata_retention_bytes < 0:
            raise ValueError(f"metadata_retention_bytes must not be negative, not {metadata_retention_bytes}")
        authorization = authorizer_config(authorizer, super_users, allow_everyone_if_no_acl_found)
        started = time.perf_counter()
        wanted_cluster = config.cluster_id if config is not None else cluster_id
        log = MetadataLog.open(
            Path(data_dir),
            cluster_id=wanted_cluster,
            node_id=config.node_id if config else node_id,
            repair=repair,
            fsync=fsync,
            segment_bytes=segment_bytes,
        )
        if config is None:
            config = ControllerConfig(
                cluster_id=log.cluster_id,
                node_id=node_id,
                session_timeout_ms=session_timeout_ms,
                host=host,
                port=port,
                max_records_per_operation=max_records_per_operation,
                default_partitions=default_partitions,
                default_replication_factor=default_replication_factor,
                authorizer=authorization,
            )
        elif config.cluster_id != log.cluster_id:
            raise LogError(f"cluster id {config.cluster_id} does not match {log.cluster_id} in {data_dir}")
        core, loaded = load_snapshot(lambda: ControllerCore(config, rng), log)
        report = StartupReport.after_snapshot(
            loaded, core.state.controller_epoch, log.recovery, time.perf_counter() - started
        )
        return cls(
            core, log, snapshot_bytes=snapshot_bytes, metadata_retention_bytes=metadata_retention_bytes, report=report
        )

    @classmethod
    def start(cls, data_dir: Path, *, now_ns: int | None = None, **options: Any) -> ControllerEngine:
        """A single voter: `load` (every option of it), replay the whole log, and open a new
        controller epoch (previous + 1, above a valid `quorum-state`'s too, so the epoch never
        goes back from one a Kafka controller had reached in an adopted data dir) with its
        LeaderChange; then `activate`, whose records are made durable at once."""
        started = time.perf_counter()
        engine = cls.load(data_dir, **options)
        log, core = engine.log, engine.core
        replayed = replay_whole_log(engine)
        known = log.quorum_state.leader_epoch if log.quorum_state is not None else 0
        epoch = max(log.last_epoch, core.state.controller_epoch, known) + 1
        offset = log.append_leader_change(epoch, core.config.node_id, wall_ms())
        core.replay(leader_change(core.config.node_id), offset, epoch)  # as written (no second read of the log)
        engine._applied = offset + 1
        engine.activate(monotonic_ns() if now_ns is None else now_ns)
        engine.commit_now()  # durably, before anything else (the orders: the full state covers them)
        engine.startup = dataclasses.replace(  # what the log held: the new LeaderChange is not counted
            engine.startup, replayed_records=replayed, seconds=time.perf_counter() - started
        )
        return engine

    def catch_up(self, to_offset: int) -> Work[int]:
        """Replay the log's records from where the state is up to `to_offset` (a standby: the
        committed offset), paced; the records replayed. Metadata transactions are applied as
        KIP-868 says (`protocol.records.transactions`): a transaction's records at its End, none
        of an aborted one, and none of one still open (held until it ends)."""
        if self._applied >= to_offset:
            return Done(0)
        return paced(self._catch_up(to_offset), self.slice_seconds)

    def _catch_up(self, to_offset: int) -> Slices[int]:
        core, transactions, applied = self.core, self._transactions, self._applied
        replayed = control = 0
        for entry in self.log.read(applied):
            offset = entry.offset
            if offset >= to_offset:
                break
            if offset < applied:
                continue  # the read starts at the batch holding `applied`
            for effective in transactions.take(offset, entry.record, entry, control=entry.control):
                core.replay(effective.record, effective.offset, effective.epoch)
            if type(entry.record) in TRANSACTION_MARKERS:
                core.replay(entry.record, offset, entry.epoch)  # only moves the last offset
            replayed += 1
            control += entry.control
            if not replayed % REPLAY_SLICE_RECORDS:
                self._applied = offset + 1
                yield None
        self._applied = applied + replayed  # offsets are contiguous (recovery checks it)
        core.authorizer()  # the ACL snapshot follows what was replayed (a refused ACL record stops here)
        self._data_records += replayed - control
        self.startup = dataclasses.replace(
            self.startup,
            replayed_records=self.startup.replayed_records + replayed,
            controller_epoch=core.state.controller_epoch,
        )
        return replayed

    def activate(self, now_ns: int) -> None:
        """Become the active controller of the epoch whose LeaderChange the state replayed last
        (the state must equal the log). As Kafka's ActivationRecordsGenerator, stage first the
        abort of a metadata transaction the previous controller left open, so that no later
        record is taken into it; or, on a log without a metadata record, the records of
        `bootstrap.checkpoint` inside a transaction (`log.bootstrap`). Every broker's session
        starts afresh from `now_ns` (a failover fences nobody: KAFKA-14392)."""
        if self._applied != self.log.next_offset:
            raise RuntimeError(f"cannot activate at offset {self._applied}: the log ends at {self.log.next_offset}")
        self._next_offset = self._taken_offset = self.log.next_offset
        self._isr_start = self.core.isr_changes()
        self._isr_marks = deque([(self.log.next_offset, self._isr_start)])
        left_open = self._transactions.open
        groups: list[list[tuple[Data, int]]] = []
        if left_open is not None:
            groups.append([(AbortTransactionRecord(reason=FAILOVER_ABORT_REASON), 0)])
            self.startup = dataclasses.replace(
                self.startup,
                aborted=f"{left_open.describe()} was left open by the previous controller: "
                f"aborted, its {len(left_open.held)} records not applied",
            )
        elif self._data_records == 0 and (bootstrap := read_bootstrap(self.log.data_dir)):
            begin, end = BeginTransactionRecord(name=BOOTSTRAP_TRANSACTION), EndTransactionRecord()
            groups += [[(begin, 0)], bootstrap, [(end, 0)]]
        for group in groups:
            self._stage_now(group)
        self._transactions = TransactionReplay(replay_framing)
        self.active = True
        self.term += 1
        self.core.start_sessions(now_ns)
        self.core.freeze()  # fills every topic's frozen copy now, so no later freeze copies them all on the event loop

    def resign(self) -> None:
        """Stop being the active controller (its epoch is over): what was decided and not committed
        may be truncated away, so the state is rebuilt from the newest snapshot (`catch_up` replays
        the committed log) and untaken control orders are dropped. A standby only stops."""
        if self.stand_down():
            self.reload()

    def stand_down(self) -> bool:
        """`resign` without the rebuild (the shell rebuilds off the event loop: `fresh_core` in a
        worker thread, then `install`); whether it was active (then its state must be rebuilt)."""
        was_active, self.active = self.active, False
        if was_active:
            self.term += 1  # work of the epoch that ended is abandoned
        return was_active

    # ------------------------------------------------------------------ what the shell reads
    @property
    def applied(self) -> int:
        """The next log offset to replay: the state holds every record below it."""
        return self._applied

    @property
    def controller_epoch(self) -> int:
        return self.core.state.controller_epoch

    @property
    def config(self) -> ControllerConfig:
        return self.core.config

    @property
    def authorizer(self) -> Authorizer | None:
        """The authorizer in force with the ACLs replayed so far (an immutable value), or None
        without one: what `ops.authorization.authorize_api` takes for the quorum's RPCs."""
        return self.core.authorizer()

    def take_denials(self) -> list[Denial]:
        """The requests the authorizer refused anything since the last call (api name, principal,
        host, what was refused), oldest first: for the shell's metric and log."""
        return self.core.take_denials()

    def advertise_port(self, port: int) -> None:
        """The port the daemon listens on, once bound (DescribeCluster names it)."""
        self.core.state.config = dataclasses.replace(self.core.state.config, port=port)

    def full_state_orders(self) -> Slices[list[ControlOrder]]:
        """A full LeaderAndIsr for every live broker (at start, in the new controller epoch), paced
        work over the state as it is now (frozen: decisions may go on while it is built)."""
        return paced(full_state_orders(self.core.freeze()), self.slice_seconds)

    def broker_address(self, broker_id: int) -> BrokerTarget | None:
        """Where the control channel reaches a registered, unfenced broker with a listener (its first
        listener: host, port, security protocol; and its epoch); else None."""
        broker = self.core.state.cluster.get(broker_id)
        if broker is None or broker.fenced or not broker.listeners:
            return None
        listener = broker.listeners[0]
        return BrokerTarget(listener.host, listener.port, broker.epoch, listener.security_protocol)

    def next_session_deadline_ns(self) -> int | None:
        return self.core.next_session_deadline_ns()

    def committed_isr_changes(self) -> IsrChanges:
        """ISR shrinks and expands made durable since this engine started (the deciding thread)."""
        return self._committed_isr().since(self._isr_start)

    def log_sizes(self) -> LogSizes:
        """Bytes of the log's segments and snapshots on disk."""
        return self.log.sizes

    def freeze(self) -> FrozenState:
        """A consistent copy of the durable state (`ControllerCore.freeze`: call on the thread that replays)."""
        return self.core.freeze()

    def counts(self) -> ClusterCounts:
        """What the cluster holds, counted without walking every partition (`ControllerCore.counts`)."""
        return self.core.counts()

    # ------------------------------------------------------------------ the commit path
    def commit(self) -> Slices[Commit] | None:
        """Take everything decided since the last commit (every wholly staged batch, and the
        control orders their records call for): None if nothing was; else the work that encodes
        the batches (paced: CPU under the GIL, on the deciding thread) and returns the `Commit`
        for `write`. The taking happens at the call (between steps: a batch still being staged is
        not taken), the encoding as the work runs, so decisions may go on meanwhile; the batches
        carry the controller epoch of the call. A standby commits nothing: whatever was staged
        since it stopped being active is dropped."""
        self._check_usable()
        groups, self._staged = self._staged, []
        orders = self._take_orders()
        if not self.active or (not groups and not orders):
            return None
        records = sum(len(group) for group in groups)
        self._taken_offset += records
        return self._encoded_commit(groups, records, orders, self._taken_offset, self.controller_epoch)

    def _encoded_commit(
        self,
        groups: list[Sequence[RecordAndVersion]],
        records: int,
        orders: list[ControlOrder],
        end_offset: int,
        epoch: int,
    ) -> Slices[Commit]:
        prepared = yield from paced(self.log.prepare_steps(groups, epoch, wall_ms()), self.slice_seconds)
        return Commit(prepared, records, orders, end_offset, epoch)

    def write(self, commit: Commit) -> int:
        """Append a commit's batches to the local log with one write and one fsync (one of each
        per segment when it crosses a roll); the records written. May run in a worker thread. A
        failure leaves the engine unusable (the state is ahead of the disk). Committed once the
        commit quorum holds them too; only then are its requests answered, its orders sent."""
        if not commit.prepared.batches:
            return 0
        try:
            self.log.write_prepared(commit.prepared)
        except BaseException as exc:
            self._broken = f"append failed: {exc}"
            raise
        return commit.records

    def commit_now(self) -> int:
        """`commit` and `write` here, without an event loop (start-up, tools, tests: a single
        voter's fsync commits what was decided); the records written."""
        work = self.commit()
        return 0 if work is None else self.write(finish(work))

    def _take_orders(self) -> list[ControlOrder]:
        """The control orders of everything decided since the last call, batched per broker; none
        while a metadata transaction is open (they are held until its End is staged)."""
        if self._transaction is not None:
            return []
        orders = self._orders.orders()
        self._orders = OutboundCollector(self.core.state)
        return orders

    def close(self) -> None:
        self.log.close()

    def _check_usable(self) -> None:
        if self._broken is not None:
            raise LogError(f"the controller cannot continue: {self._broken}")


class Commit(NamedTuple):
    """What one commit appends: the batches decided since the previous commit, encoded (one
    record batch per staged batch, atomic), and the control orders to send once they commit."""

    prepared: PreparedAppend
    records: int
    orders: list[ControlOrder]
    #: the log's end offset once these batches are appended (what must be committed)
    end_offset: int
    #: the controller epoch its batches carry: only that epoch's leader may append them
    epoch: int
