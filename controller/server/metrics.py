"""The controller's Prometheus metrics, modelled on Kafka's controller and request metrics.

Names carry the `fencer_` prefix and follow Kafka's MBeans where one exists:
`kafka.controller:type=KafkaController,name=ActiveBrokerCount` becomes
`fencer_controller_active_broker_count`, kafka.network's RequestMetrics become
`fencer_requests_total` and the latency histograms.

Rules:
- Each `ControllerMetrics` owns a private `CollectorRegistry` (tests and embedded daemons make
  several); nothing is registered in prometheus_client's global registry.
- This module defines the metrics the daemon records as things happen, and the methods that
  record them; what is read or built only at scrape time (the request counts and latencies, the
  cluster gauges, what the engine committed, the quorum's gauges) comes from the collectors of
  `controller.server.metric_collectors`, registered in the same registry.
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

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

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

from .engine_views import CommittedProvider, StateProvider
from .metric_collectors import (
    LATENCY_BUCKETS,
    ClusterCollector,
    CommittedCollector,
    RaftCollector,
    RequestStats,
    api_name,
)
from .request_checks import InvalidRequestError
from .tls import HANDSHAKE_FAILURE_REASONS

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


class ControllerMetrics:
    """Every metric of the daemon, in one private registry; `render()` is what /metrics serves."""

    def __init__(self, state_provider: StateProvider, committed_provider: CommittedProvider = lambda: None) -> None:
        self.registry = CollectorRegistry()
        self._define_request_metrics()
        self._define_log_metrics()
        self._define_outbound_metrics()
        self._define_server_metrics()
        self._define_raft_metrics()
        self.registry.register(ClusterCollector(state_provider))
        self.registry.register(CommittedCollector(committed_provider))

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

        self._heartbeats_timed_out = Counter(
            "fencer_broker_heartbeats_timed_out",
            "Broker heartbeats not decided by their deadline (half the heartbeat interval): answered "
            "REQUEST_TIMED_OUT, their sessions kept (Kafka's TimedOutBrokerHeartbeatCount)",
            registry=self.registry,
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

    def heartbeat_timed_out(self) -> None:
        self._heartbeats_timed_out.inc()

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
        self.registry.register(RaftCollector(view))
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
