"""The metrics computed when Prometheus scrapes: the collectors `ControllerMetrics` registers.

Rules:
- Requests are counted by `RequestStats`, not by prometheus_client's labelled children: every
  request is recorded, so recording is plain arithmetic on ints and lists (the event loop is the
  only thread that records or scrapes: no locks), and the metric families, with their label names
  and cumulative buckets, are built only when scraped. APIs and errors are labelled by name, as
  everywhere in the daemon's metrics (`api_name`, Kafka's error names).
- The engine is read through its views (`controller.server.engine_views`), never through its
  core, at each scrape; while the daemon starts (no engine yet) a collector reading it exports
  its families without a sample.
- The cluster gauges are the engine's counts (`StateView.counts`) at scrape time, so they can
  never drift from the state. A scrape costs O(brokers): partition counts are the ones replay
  keeps (`ReplicationState`), never a walk over every partition on the event loop.
- As in Kafka, a broker counts as active when it is not fenced (one in controlled shutdown is
  still active); a partition is offline when it has no leader (-1). A broker counts as in
  controlled shutdown while its registration carries the flag, fenced or not: from its first
  ControlledShutdown (or WantShutDown) until a new incarnation registers (Kafka's
  ControlledShutdownBrokerCount), so a broker that finished shutting down is both fenced and
  counted there until it is back.
- What the engine made durable (`CommittedView`) is read at scrape time too: ISR shrinks and
  expands committed since the process started (changes replayed from the log at start-up are
  history, as for Kafka's meters, which count since the broker started; a restart resets the
  counters, which `rate()` and `increase()` expect), and the metadata log's bytes on disk, from
  the sizes the log keeps (no directory scan).
- The quorum's gauges (Kafka's raft-metrics: current-leader, current-epoch, current-vote,
  high-watermark, log-end-offset, current-state; ActiveControllerCount; each voter's lag on the
  leader) are read at scrape time from the quorum's view (`Quorum.view`), -1 where Kafka
  reports none.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable
from itertools import accumulate

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from protocol.error_codes import error_name
from protocol.registry import api

from .engine_views import CommittedProvider, CommittedView, StateProvider, StateView

#: Request latencies: 0.1 ms .. 1 s (Prometheus adds +Inf).
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
#: The `le` labels of those buckets, as prometheus_client writes them.
_LATENCY_LE = (*(repr(bound) for bound in LATENCY_BUCKETS), "+Inf")


def api_name(api_key: int) -> str:
    """The API's name for a label ("AlterPartition"), or `UNKNOWN(<key>)`."""
    try:
        return api(api_key).name
    except KeyError:
        return f"UNKNOWN({api_key})"


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
    """Kafka's controller gauges, computed from the engine's counts at each scrape."""

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

    def __init__(self, state_provider: StateProvider) -> None:
        self._state_provider = state_provider

    def describe(self) -> Iterable[Metric]:
        return [GaugeMetricFamily(name, documentation) for name, documentation in self.GAUGES]

    def collect(self) -> Iterable[Metric]:
        view = self._state_provider()
        if view is None:
            return self.describe()
        values = cluster_gauges(view)
        return [GaugeMetricFamily(name, documentation, value=values[name]) for name, documentation in self.GAUGES]


def cluster_gauges(view: StateView) -> dict[str, float]:
    """The values of `ClusterCollector.GAUGES` for the engine's state as it is now."""
    counts = view.counts()
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

    def __init__(self, committed_provider: CommittedProvider) -> None:
        self._committed_provider = committed_provider

    def describe(self) -> Iterable[Metric]:
        return self._families(None)

    def collect(self) -> Iterable[Metric]:
        return self._families(self._committed_provider())

    def _families(self, engine: CommittedView | None) -> list[Metric]:
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


class RaftCollector(Collector):
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
