"""The controller's Prometheus metrics, modelled on Kafka's controller and request metrics.

Names carry the `fencer_` prefix and follow Kafka's MBeans where one exists:
`kafka.controller:type=KafkaController,name=ActiveBrokerCount` becomes
`fencer_controller_active_broker_count`, kafka.network's RequestMetrics become
`fencer_requests_total` and the latency histograms.

Rules:
- Each `ControllerMetrics` owns a private `CollectorRegistry` (tests and embedded daemons make
  several); nothing is registered in prometheus_client's global registry.
- The cluster gauges are read at scrape time from the core that `core_provider` returns, so
  they can never drift from the state; while the daemon starts (no core yet) they have no sample.
  A scrape costs O(brokers): partition counts are the ones replay keeps (`ReplicationState`),
  never a walk over every partition on the event loop.
- As in Kafka, a broker counts as active when it is not fenced (one in controlled shutdown is
  still active); a partition is offline when it has no leader (-1). A broker counts as in
  controlled shutdown while its registration carries the flag, fenced or not: from its first
  ControlledShutdown (or WantShutDown) until a new incarnation registers (Kafka's
  ControlledShutdownBrokerCount), so a broker that finished shutting down is both fenced and
  counted there until it is back.
- What the engine made durable is read from the engine that `engine_provider` returns, at
  scrape time too: ISR shrinks and expands committed since the process started (changes
  replayed from the log at start-up are history, as for Kafka's meters, which count since the
  broker started; a restart resets the counters, which `rate()` and `increase()` expect), and
  the metadata log's bytes on disk, from the sizes the log keeps (no directory scan).
- APIs and errors are labelled by name, never by number: the API's name ("AlterPartition") and
  Kafka's error name ("STALE_BROKER_EPOCH"). Versions and broker ids are labelled as numbers.
- `capture(rows, parts)` takes the capture writer's running totals, not increments.
- The quorum's metrics follow Kafka's `raft-metrics` group (current-leader, current-epoch,
  current-vote, high-watermark, log-end-offset, current-state, election-latency,
  commit-latency) as `fencer_raft_*`, read at scrape time from the quorum's view, plus Kafka's
  ActiveControllerCount as `fencer_controller_active_controller_count` and each voter's lag
  behind the leader's log end (`fencer_raft_follower_lag_records{voter}`, on the leader only).
- Recording never raises on a value it does not know (an unknown api key or error code gets a
  placeholder name): a metric must not take the daemon down.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable
from itertools import accumulate
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from protocol.error_codes import error_name
from protocol.error_codes import response_error_code as response_error_code  # re-exported: the daemon uses it from here
from protocol.errors import (
    DecodeError,
    FrameTooLargeError,
    TrailingBytesError,
    TruncatedError,
    UnknownApiError,
    UnsupportedVersionError,
)
from protocol.registry import api
from protocol.request_checks import InvalidRequestError

from ..core import ControllerCore
from ..log import LogSizes
from ..state.replication import IsrChanges
from .tls import HANDSHAKE_FAILURE_REASONS

CoreProvider = Callable[[], ControllerCore | None]


class EngineView(Protocol):
    """What the metrics read of the engine (`controller.engine.ControllerEngine`) at each scrape."""

    def committed_isr_changes(self) -> IsrChanges: ...
    def log_sizes(self) -> LogSizes: ...


EngineProvider = Callable[[], EngineView | None]

#: Request latencies: 0.1 ms .. 1 s (Prometheus adds +Inf).
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
#: The `le` labels of those buckets, as prometheus_client writes them.
_LATENCY_LE = (*(repr(bound) for bound in LATENCY_BUCKETS), "+Inf")
#: Requests in one group commit: 1, 2, 4, ..., 512.
GROUP_REQUEST_BUCKETS = tuple(float(2**n) for n in range(10))
#: Records in one group commit: 1, 2, 4, ..., 8192 (a CreateTopics alone may write hundreds).
GROUP_RECORD_BUCKETS = tuple(float(2**n) for n in range(14))
#: Snapshot write times: 10 ms .. 5 min.
SNAPSHOT_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0)
#: Where the controller failed on a request it had decoded (the connection is closed unanswered).
REQUEST_FAILURE_STAGES = ("decide", "encode", "raft")
#: Why a connection was closed at accept.
CONNECTION_REFUSAL_REASONS = ("max_connections", "descriptors")
#: Why a frame was refused (the connection is closed without a response).
INVALID_FRAME_REASONS = tuple(
    error.reason
    for error in (
        UnknownApiError,
        UnsupportedVersionError,
        DecodeError,
        TrailingBytesError,
        FrameTooLargeError,
        TruncatedError,
        InvalidRequestError,
    )
)


def api_name(api_key: int) -> str:
    """The API's name for a label ("AlterPartition"), or `UNKNOWN(<key>)`."""
    try:
        return api(api_key).name
    except KeyError:
        return f"UNKNOWN({api_key})"


class ControllerMetrics:
    """Every metric of the daemon, in one private registry; `render()` is what /metrics serves."""

    def __init__(self, core_provider: CoreProvider, engine_provider: EngineProvider = lambda: None) -> None:
        self.registry = CollectorRegistry()
        self._define_request_metrics()
        self._define_log_metrics()
        self._define_outbound_metrics()
        self._define_server_metrics()
        self._define_raft_metrics()
        self.registry.register(ClusterCollector(core_provider))
        self.registry.register(CommittedCollector(engine_provider))

    def _define_request_metrics(self) -> None:
        registry = self.registry
        self._request_stats = RequestStats()
        registry.register(self._request_stats)
        self._invalid_frames = self._counter_by(
            "fencer_invalid_frames", "Frames refused (connection closed), by reason", "reason", INVALID_FRAME_REASONS
        )
        self._tls_failures = self._counter_by(
            "fencer_tls_handshake_failures",
            "TLS handshakes on the Kafka listener that failed (connection closed unanswered), by reason",
            "reason",
            HANDSHAKE_FAILURE_REASONS,
        )
        self._authorization_denied = Counter(
            "fencer_authorization_denied",
            "Requests the authorizer refused (anything in them), by API and principal",
            ["api", "principal"],
            registry=self.registry,
        )
        self._request_failures = self._counter_by(
            "fencer_request_failures",
            "Requests the controller failed to decide or to encode an answer for, or the quorum to handle "
            "(a bug; closed, or a quorum RPC answered UNKNOWN_SERVER_ERROR), by stage",
            "stage",
            REQUEST_FAILURE_STAGES,
        )

    def _counter_by(self, name: str, documentation: str, label: str, values: Iterable[str]) -> Counter:
        """A counter with one label, every known value of it exported from the start (at 0), so a
        dashboard's rate() sees the first one."""
        counter = Counter(name, documentation, [label], registry=self.registry)
        for value in values:
            counter.labels(**{label: value})
        return counter

    def _define_log_metrics(self) -> None:
        registry = self.registry
        self._append_latency = Histogram(
            "fencer_log_append_latency_seconds",
            "Write and fsync of one group commit",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self._group_requests = Histogram(
            "fencer_group_commit_requests",
            "Record batches (one per request that wrote records) made durable by one group commit",
            buckets=GROUP_REQUEST_BUCKETS,
            registry=registry,
        )
        self._group_records = Histogram(
            "fencer_group_commit_records",
            "Records appended by one group commit",
            buckets=GROUP_RECORD_BUCKETS,
            registry=registry,
        )
        self._capture_rows = Counter("fencer_capture_rows", "Frames written to capture files", registry=registry)
        self._capture_parts = Counter("fencer_capture_parts", "Capture files (Parquet parts) closed", registry=registry)
        self._capture_totals = (0, 0)

    def _define_server_metrics(self) -> None:
        registry = self.registry
        self._connections_refused = self._counter_by(
            "fencer_connections_refused",
            "Connections closed at accept (max_connections) or not accepted for lack of descriptors",
            "reason",
            CONNECTION_REFUSAL_REASONS,
        )
        self._snapshots = self._counter_by(
            "fencer_snapshots", "Snapshots attempted, by outcome", "outcome", ("written", "failed")
        )
        self._snapshot_seconds = Histogram(
            "fencer_snapshot_write_seconds", "Time to write one snapshot", buckets=SNAPSHOT_BUCKETS, registry=registry
        )
        self._capture_failures = Counter(
            "fencer_capture_failures", "Capture parts that could not be written (rows dropped)", registry=registry
        )
        self._open_connections = Gauge("fencer_open_connections", "Inbound connections open", registry=registry)
        self._queued_bytes = Gauge(
            "fencer_queued_request_bytes",
            "Memory reserved for requests being read, waiting or in flight (--max-queued-bytes)",
            registry=registry,
        )

    def _define_raft_metrics(self) -> None:
        registry = self.registry
        self._raft_queue = Gauge(
            "fencer_raft_inbound_queue",
            "Quorum RPCs waiting for the quorum's task (connections wait while it is full)",
            registry=registry,
        )
        self._election_latency = Histogram(
            "fencer_raft_election_latency_seconds",
            "From losing sight of a leader to knowing the next (Kafka's raft-metrics election-latency)",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30),
            registry=registry,
        )
        self._raft_commit_latency = Histogram(
            "fencer_raft_commit_latency_seconds",
            "From a local append's fsync to the high watermark passing it (Kafka's raft-metrics commit-latency)",
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1),
            registry=registry,
        )

    def _define_outbound_metrics(self) -> None:
        registry = self.registry
        self._outbound_depth = Gauge(
            "fencer_outbound_queue_depth",
            "Control requests waiting to be sent to a broker",
            ["broker"],
            registry=registry,
        )
        self._outbound_requests = Counter(
            "fencer_outbound_requests",
            "Control requests answered by brokers, by error",
            ["broker", "api", "error"],
            registry=registry,
        )
        self._outbound_errors = Counter(
            "fencer_outbound_errors",
            "Control responses reporting an error (top-level or per partition)",
            ["broker", "api", "error"],
            registry=registry,
        )
        self._outbound_connection_failures = Counter(
            "fencer_outbound_connection_failures",
            "Failed connections to a broker's listener",
            ["broker"],
            registry=registry,
        )

    # ------------------------------------------------------------------ recording
    def request(self, api_key: int, api_version: int, error_code: int, latency_s: float, queue_s: float) -> None:
        """One answered request: its error, its latency (arrival -> sent) and queue time (arrival -> decided)."""
        self._request_stats.observe(api_key, api_version, error_code, latency_s, queue_s)

    def invalid_frame(self, reason: str) -> None:
        """A refused frame; `reason` is one of `INVALID_FRAME_REASONS`."""
        self._invalid_frames.labels(reason=reason).inc()

    def tls_handshake_failure(self, reason: str) -> None:
        """A failed TLS handshake; `reason` is one of `tls.HANDSHAKE_FAILURE_REASONS`."""
        self._tls_failures.labels(reason=reason).inc()

    def authorization_denied(self, api: str, principal: str) -> None:
        """A request (or part of one) the authorizer refused."""
        self._authorization_denied.labels(api=api, principal=principal).inc()

    def request_failed(self, stage: str) -> None:
        """A decoded request the controller failed on; `stage` is one of `REQUEST_FAILURE_STAGES`."""
        self._request_failures.labels(stage=stage).inc()

    def group_commit(self, batches: int, records: int, append_seconds: float) -> None:
        """One group commit: how many batches (one per request that wrote records, several for a
        large operation) and records it made durable, and its encode + write + fsync time."""
        self._group_requests.observe(batches)
        self._group_records.observe(records)
        self._append_latency.observe(append_seconds)

    def connection_refused(self, reason: str) -> None:
        """A connection closed at accept; `reason` is one of `CONNECTION_REFUSAL_REASONS`."""
        self._connections_refused.labels(reason=reason).inc()

    def snapshot(self, ok: bool, seconds: float) -> None:
        """A snapshot written (`ok`) or failed, and how long it took."""
        self._snapshots.labels(outcome="written" if ok else "failed").inc()
        self._snapshot_seconds.observe(seconds)

    def capture_failure(self) -> None:
        self._capture_failures.inc()

    def watch_server(self, open_connections: Callable[[], float], queued_bytes: Callable[[], float]) -> None:
        """Read the open connections and the reserved request memory at each scrape."""
        self._open_connections.set_function(open_connections)
        self._queued_bytes.set_function(queued_bytes)

    def outbound_queue(self, broker_id: int, depth: int) -> None:
        self._outbound_depth.labels(broker=str(broker_id)).set(depth)

    def outbound_response(self, broker_id: int, api_key: int, error_code: int) -> None:
        """A broker's answer to a control request; a non-zero code also counts as an error."""
        labels = {"broker": str(broker_id), "api": api_name(api_key), "error": error_name(error_code)}
        self._outbound_requests.labels(**labels).inc()
        if error_code != 0:
            self._outbound_errors.labels(**labels).inc()

    def outbound_connection_failure(self, broker_id: int) -> None:
        self._outbound_connection_failures.labels(broker=str(broker_id)).inc()

    def watch_quorum(self, view: Callable[[], dict[str, object]], queued: Callable[[], float] = lambda: 0) -> None:
        """Read the quorum's state (`Quorum.view`) and its inbound queue's length at every scrape."""
        self.registry.register(_RaftCollector(view))
        self._raft_queue.set_function(queued)

    def election(self, seconds: float) -> None:
        """A leader became known after `seconds` without one (Kafka's election-latency)."""
        self._election_latency.observe(seconds)

    def raft_commit(self, seconds: float) -> None:
        """A local append reached the high watermark after `seconds` (Kafka's commit-latency)."""
        self._raft_commit_latency.observe(seconds)

    def capture(self, rows: int, parts: int) -> None:
        """The capture writer's running totals: rows (frames) written and parts (files) closed so far.

        Only the growth since the previous call is counted, so calling again with the same totals
        counts nothing; totals below the previous ones mean a new writer, counted from zero."""
        self._capture_rows.inc(_growth(rows, self._capture_totals[0]))
        self._capture_parts.inc(_growth(parts, self._capture_totals[1]))
        self._capture_totals = (rows, parts)

    def render(self) -> bytes:
        """Every metric in Prometheus' text exposition format (version 0.0.4)."""
        return generate_latest(self.registry)


def _growth(total: int, previous: int) -> int:
    """How much a running total grew since `previous` (all of it after a reset to a lower total)."""
    return total - previous if total >= previous else total


class RequestStats(Collector):
    """Requests by API, version and error, and latency and queue-time histograms by API.

    Every request is recorded, so recording is plain arithmetic on ints and lists (the event loop
    is the only thread that records or scrapes: no locks); the metric families, with their label
    names and cumulative buckets, are built only when scraped."""

    def __init__(self) -> None:
        self._counts: dict[tuple[int, int, int], int] = {}
        #: api key -> (latency, queue time)
        self._histograms: dict[int, tuple[_LatencyHistogram, _LatencyHistogram]] = {}

    def observe(self, api_key: int, api_version: int, error_code: int, latency_s: float, queue_s: float) -> None:
        key = (api_key, api_version, error_code)
        counts = self._counts
        counts[key] = counts.get(key, 0) + 1
        histograms = self._histograms.get(api_key)
        if histograms is None:
            histograms = self._histograms[api_key] = (_LatencyHistogram(), _LatencyHistogram())
        histograms[0].add(latency_s)
        histograms[1].add(queue_s)

    def describe(self) -> Iterable[Metric]:
        return self._families()

    def collect(self) -> Iterable[Metric]:
        return self._families(record=True)

    def _families(self, record: bool = False) -> list[Metric]:
        requests = CounterMetricFamily(
            "fencer_requests", "Requests answered, by API, version and error", labels=["api", "version", "error"]
        )
        latency = HistogramMetricFamily(
            "fencer_request_latency_seconds",
            "Time from a request's arrival to its response being sent",
            labels=["api"],
        )
        queue = HistogramMetricFamily(
            "fencer_request_queue_time_seconds", "Time from a request's arrival to the core's decision", labels=["api"]
        )
        if record:
            for (api_key, version, error_code), count in sorted(self._counts.items()):
                requests.add_metric([api_name(api_key), str(version), error_name(error_code)], count)
            for api_key, (latencies, queue_times) in sorted(self._histograms.items()):
                name = api_name(api_key)
                latency.add_metric([name], latencies.cumulative(), latencies.total)
                queue.add_metric([name], queue_times.cumulative(), queue_times.total)
        return [requests, latency, queue]


class _LatencyHistogram:
    """Counts per `LATENCY_BUCKETS` bucket (the last is +Inf; a value goes to the first bucket
    whose bound is >= it, as Prometheus' `le`) and their sum."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BUCKETS) + 1)
        self.total = 0.0

    def add(self, value: float) -> None:
        self.counts[bisect_left(LATENCY_BUCKETS, value)] += 1
        self.total += value

    def cumulative(self) -> list[tuple[str, float]]:
        return list(zip(_LATENCY_LE, accumulate(self.counts), strict=True))


class ClusterCollector(Collector):
    """Kafka's controller gauges, computed from the core at each scrape."""

    GAUGES = (
        ("fencer_controller_active_broker_count", "Registered brokers that are not fenced"),
        ("fencer_controller_fenced_broker_count", "Registered brokers that are fenced"),
        (
            "fencer_controller_controlled_shutdown_broker_count",
            "Registered brokers in controlled shutdown, fenced or not (from the request until a new incarnation"
            " registers)",
        ),
        ("fencer_controller_global_topic_count", "Topics in the cluster"),
        ("fencer_controller_global_partition_count", "Partitions in the cluster"),
        ("fencer_controller_offline_partitions_count", "Partitions without a leader"),
        ("fencer_controller_last_applied_record_offset", "Offset of the last metadata record replayed"),
        ("fencer_controller_epoch", "The controller epoch"),
    )

    def __init__(self, core_provider: CoreProvider) -> None:
        self._core_provider = core_provider

    def describe(self) -> Iterable[Metric]:
        return [GaugeMetricFamily(name, documentation) for name, documentation in self.GAUGES]

    def collect(self) -> Iterable[Metric]:
        core = self._core_provider()
        if core is None:
            return self.describe()
        values = cluster_gauges(core)
        return [GaugeMetricFamily(name, documentation, value=values[name]) for name, documentation in self.GAUGES]


def cluster_gauges(core: ControllerCore) -> dict[str, float]:
    """The values of `ClusterCollector.GAUGES` for this core."""
    counts = core.counts()
    return {
        "fencer_controller_active_broker_count": counts.active_brokers,
        "fencer_controller_fenced_broker_count": counts.fenced_brokers,
        "fencer_controller_controlled_shutdown_broker_count": counts.controlled_shutdown_brokers,
        "fencer_controller_global_topic_count": counts.topics,
        "fencer_controller_global_partition_count": counts.partitions,
        "fencer_controller_offline_partitions_count": counts.leaderless_partitions,
        "fencer_controller_last_applied_record_offset": counts.last_offset,
        "fencer_controller_epoch": counts.controller_epoch,
    }


class CommittedCollector(Collector):
    """What the engine made durable, read at each scrape: ISR shrinks and expands committed (as
    counters: Kafka's IsrShrinksPerSec and IsrExpandsPerSec) and the metadata log's size on disk
    (Kafka's kafka.log:type=Log,name=Size), by kind of file. Without an engine, no sample."""

    SHRINKS = (
        "fencer_isr_shrinks",
        "Committed partition changes that took a replica out of an ISR (AlterPartition, fencing, controlled shutdown,"
        " offline replica, unclean election; a swap counts here and as an expand), since the process started: changes"
        " replayed at start-up are not counted",
    )
    EXPANDS = (
        "fencer_isr_expands",
        "Committed partition changes that put a replica into an ISR (AlterPartition, unclean election), since the"
        " process started: changes replayed at start-up are not counted",
    )
    LOG_SIZE = (
        "fencer_metadata_log_size_bytes",
        "Bytes on disk of the metadata log, by kind: segments (Kafka's Log Size) and snapshots; retention bounds"
        " their sum",
    )

    def __init__(self, engine_provider: EngineProvider) -> None:
        self._engine_provider = engine_provider

    def describe(self) -> Iterable[Metric]:
        return self._families(None)

    def collect(self) -> Iterable[Metric]:
        return self._families(self._engine_provider())

    def _families(self, engine: EngineView | None) -> list[Metric]:
        shrinks, expands = CounterMetricFamily(*self.SHRINKS), CounterMetricFamily(*self.EXPANDS)
        size = GaugeMetricFamily(*self.LOG_SIZE, labels=["kind"])
        if engine is not None:
            changes = engine.committed_isr_changes()
            shrinks.add_metric([], changes.shrinks)
            expands.add_metric([], changes.expands)
            sizes = engine.log_sizes()
            size.add_metric(["segments"], sizes.segments)
            size.add_metric(["snapshots"], sizes.snapshots)
        return [shrinks, expands, size]


class _RaftCollector(Collector):
    """The quorum's gauges at scrape time (Kafka's raft-metrics; -1 where Kafka reports none)."""

    STATES = ("unattached", "prospective", "candidate", "leader", "follower", "resigned")

    def __init__(self, view: Callable[[], dict[str, object]]) -> None:
        self._view = view

    def describe(self) -> Iterable[Metric]:
        return self._families(None)

    def collect(self) -> Iterable[Metric]:
        return self._families(self._view())

    def _families(self, view: dict[str, object] | None) -> list[Metric]:
        gauges = {
            "leader_id": GaugeMetricFamily("fencer_raft_current_leader", "The leader this node knows (-1: none)"),
            "epoch": GaugeMetricFamily("fencer_raft_current_epoch", "The quorum's epoch (the controller epoch)"),
            "voted_id": GaugeMetricFamily("fencer_raft_current_vote", "The vote cast in this epoch (-1: none)"),
            "high_watermark": GaugeMetricFamily(
                "fencer_raft_high_watermark", "The committed end of the log as this node knows it (-1: unknown)"
            ),
            "log_end_offset": GaugeMetricFamily("fencer_raft_log_end_offset", "The local log's end offset"),
        }
        state = GaugeMetricFamily("fencer_raft_current_state", "1 for this node's Raft state", labels=["state"])
        active = GaugeMetricFamily(
            "fencer_controller_active_controller_count", "1 on the active controller (Kafka's ActiveControllerCount)"
        )
        lag = GaugeMetricFamily(
            "fencer_raft_follower_lag_records",
            "Records a voter's log lacks of the leader's (leader only)",
            labels=["voter"],
        )
        if view is not None:
            for key, family in gauges.items():
                value = view[key]
                family.add_metric([], -1 if value is None else float(value))  # type: ignore[arg-type]
            for name in self.STATES:
                state.add_metric([name], 1.0 if view["state"] == name else 0.0)
            active.add_metric([], 1.0 if view["active_controller"] else 0.0)
            for voter, records in dict(view["follower_lag"]).items():  # type: ignore[call-overload]
                lag.add_metric([str(voter)], float(records))
        return [*gauges.values(), state, active, lag]
