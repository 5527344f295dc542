"""Prometheus metrics and `response_error_code` (controller.server.metrics)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from controller.engine import ControllerEngine
from controller.log import LogSizes
from controller.server.engine_views import StateView
from controller.server.metrics import ControllerMetrics, response_error_code
from controller.slices import finish
from controller.state.replication import IsrChanges
from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import (
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)
from protocol.messages.alter_replica_state import (
    OFFLINE,
    AlterReplicaStateResponse,
    AlterReplicaStateResponsePartitionResult,
    AlterReplicaStateResponseTopicResult,
)
from protocol.messages.broker_heartbeat import BrokerHeartbeatResponse
from protocol.messages.create_topics import CreateTopicsResponse, CreateTopicsResponseCreatableTopicResult
from protocol.messages.delete_topics import DeleteTopicsResponse, DeleteTopicsResponseDeletableTopicResult
from protocol.messages.elect_leaders import (
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
)
from protocol.messages.leader_and_isr import LeaderAndIsrResponse, LeaderAndIsrResponsePartitionError
from protocol.records.control import LeaderChangeMessage
from protocol.spec import Data

from ..harness import Harness
from ..test_engine import shrink_request, workload

Labels = dict[str, str]


def samples(metrics: ControllerMetrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of `render()`, parsed back, keyed by (sample name, labels)."""
    out = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(metrics: ControllerMetrics, name: str, **labels: str) -> float | None:
    return samples(metrics).get((name, frozenset(labels.items())))


def fenced_cluster() -> Harness:
    """Brokers 1-3; "solo" lives on broker 3 alone, "spread" on all three; then broker 3 is fenced."""
    h = Harness()
    h.start_brokers(1, 2, 3)
    h.create_topic("spread", assignments=[[1, 2, 3], [2, 3, 1]])
    h.create_topic("solo", assignments=[[3]])
    h.advance(5000)
    h.heartbeat(1)
    h.heartbeat(2)
    fenced = h.advance(5000)
    assert len(fenced) == 1
    assert h.core.state.cluster.brokers[3].fenced
    return h


# ---------------------------------------------------------------------------- recorded metrics
def test_request_counts_and_latencies_are_labelled_by_api_version_and_error_name() -> None:
    metrics = ControllerMetrics(lambda: None)
    metrics.request(56, 2, ErrorCode.STALE_BROKER_EPOCH, latency_s=0.002, queue_s=0.0005)
    metrics.request(56, 2, 0, latency_s=0.004, queue_s=0.001)
    metrics.request(56, 2, 0, latency_s=0.004, queue_s=0.001)
    metrics.request(63, 1, 0, latency_s=0.0001, queue_s=0.0001)

    assert value(metrics, "fencer_requests_total", api="AlterPartition", version="2", error="NONE") == 2
    assert value(metrics, "fencer_requests_total", api="AlterPartition", version="2", error="STALE_BROKER_EPOCH") == 1
    assert value(metrics, "fencer_requests_total", api="BrokerHeartbeat", version="1", error="NONE") == 1
    assert value(metrics, "fencer_request_latency_seconds_count", api="AlterPartition") == 3
    assert value(metrics, "fencer_request_latency_seconds_sum", api="AlterPartition") == pytest.approx(0.010)
    assert value(metrics, "fencer_request_latency_seconds_bucket", api="AlterPartition", le="0.0025") == 1
    assert value(metrics, "fencer_request_queue_time_seconds_bucket", api="AlterPartition", le="0.0001") == 0
    assert value(metrics, "fencer_request_queue_time_seconds_bucket", api="BrokerHeartbeat", le="0.0001") == 1
    assert value(metrics, "fencer_request_queue_time_seconds_bucket", api="AlterPartition", le="1.0") == 3


def test_unknown_api_keys_and_error_codes_get_placeholder_names() -> None:
    metrics = ControllerMetrics(lambda: None)
    metrics.request(999, 0, 12345, latency_s=0.0, queue_s=0.0)
    assert value(metrics, "fencer_requests_total", api="UNKNOWN(999)", version="0", error="UNKNOWN(12345)") == 1


def test_invalid_frames_are_counted_by_reason_and_every_reason_starts_at_zero() -> None:
    metrics = ControllerMetrics(lambda: None)
    metrics.invalid_frame("trailing_bytes")
    metrics.invalid_frame("trailing_bytes")
    for reason in ("unknown_api", "unsupported_version", "undecodable", "frame_too_large", "truncated"):
        assert value(metrics, "fencer_invalid_frames_total", reason=reason) == 0
    assert value(metrics, "fencer_invalid_frames_total", reason="trailing_bytes") == 2


def test_group_commits_observe_requests_records_and_append_time() -> None:
    metrics = ControllerMetrics(lambda: None)
    metrics.group_commit(batches=3, records=40, append_seconds=0.0008)
    metrics.group_commit(batches=1, records=1, append_seconds=0.0002)

    assert value(metrics, "fencer_group_commit_requests_bucket", le="1.0") == 1
    assert value(metrics, "fencer_group_commit_requests_bucket", le="2.0") == 1
    assert value(metrics, "fencer_group_commit_requests_bucket", le="4.0") == 2
    assert value(metrics, "fencer_group_commit_requests_bucket", le="512.0") == 2
    assert value(metrics, "fencer_group_commit_records_sum") == 41
    assert value(metrics, "fencer_log_append_latency_seconds_count") == 2
    assert value(metrics, "fencer_log_append_latency_seconds_bucket", le="0.0005") == 1


def test_outbound_metrics_count_responses_errors_queue_depth_and_connection_failures() -> None:
    metrics = ControllerMetrics(lambda: None)
    metrics.outbound_queue(2, 7)
    metrics.outbound_queue(2, 3)
    metrics.outbound_response(2, 4, 0)
    metrics.outbound_response(2, 4, ErrorCode.STALE_CONTROLLER_EPOCH)
    metrics.outbound_response(1, 5, ErrorCode.KAFKA_STORAGE_ERROR)
    metrics.outbound_connection_failure(1)
    metrics.outbound_connection_failure(1)

    assert value(metrics, "fencer_outbound_queue_depth", broker="2") == 3
    assert value(metrics, "fencer_outbound_requests_total", broker="2", api="LeaderAndIsr", error="NONE") == 1
    stale = {"broker": "2", "api": "LeaderAndIsr", "error": "STALE_CONTROLLER_EPOCH"}
    assert value(metrics, "fencer_outbound_requests_total", **stale) == 1
    assert value(metrics, "fencer_outbound_errors_total", **stale) == 1
    assert value(metrics, "fencer_outbound_errors_total", broker="2", api="LeaderAndIsr", error="NONE") is None
    storage = {"broker": "1", "api": "StopReplica", "error": "KAFKA_STORAGE_ERROR"}
    assert value(metrics, "fencer_outbound_errors_total", **storage) == 1
    assert value(metrics, "fencer_outbound_connection_failures_total", broker="1") == 2


def test_capture_counters_follow_the_writers_running_totals() -> None:
    metrics = ControllerMetrics(lambda: None)
    metrics.capture(rows=100, parts=0)
    metrics.capture(rows=120, parts=1)
    metrics.capture(rows=120, parts=1)  # nothing new since the last call
    assert value(metrics, "fencer_capture_rows_total") == 120
    assert value(metrics, "fencer_capture_parts_total") == 1
    metrics.capture(rows=7, parts=0)  # a new writer starts from zero
    assert value(metrics, "fencer_capture_rows_total") == 127
    assert value(metrics, "fencer_capture_parts_total") == 1


def test_each_instance_has_its_own_registry() -> None:
    first, second = ControllerMetrics(lambda: None), ControllerMetrics(lambda: None)
    first.capture(rows=5, parts=0)
    assert first.registry is not second.registry
    assert value(second, "fencer_capture_rows_total") == 0


# ---------------------------------------------------------------------------- cluster gauges
def test_cluster_gauges_have_no_sample_before_the_engine_exists() -> None:
    text = ControllerMetrics(lambda: None).render().decode()
    assert "# TYPE fencer_controller_active_broker_count gauge" in text
    assert not any(line.startswith("fencer_controller_") for line in text.splitlines())


def test_cluster_gauges_follow_the_engines_state_at_each_scrape() -> None:
    h = fenced_cluster()
    engine: StateView | None = None  # a harness's core has the methods the metrics read of the engine
    metrics = ControllerMetrics(lambda: engine)
    assert value(metrics, "fencer_controller_active_broker_count") is None

    engine = h.core
    assert value(metrics, "fencer_controller_active_broker_count") == 2
    assert value(metrics, "fencer_controller_fenced_broker_count") == 1
    assert value(metrics, "fencer_controller_global_topic_count") == 2
    assert value(metrics, "fencer_controller_global_partition_count") == 3
    assert value(metrics, "fencer_controller_offline_partitions_count") == 1  # "solo": its only replica is fenced
    assert value(metrics, "fencer_controller_last_applied_record_offset") == len(h.log) - 1
    assert value(metrics, "fencer_controller_epoch") == 0

    h.core.replay(LeaderChangeMessage(leader_id=3000), len(h.log), epoch=4)
    h.register(4)
    assert value(metrics, "fencer_controller_epoch") == 4
    assert value(metrics, "fencer_controller_fenced_broker_count") == 2  # a new registration starts fenced
    assert value(metrics, "fencer_controller_last_applied_record_offset") == h.core.state.last_offset


def test_a_broker_in_controlled_shutdown_still_counts_as_active_as_in_kafka() -> None:
    h = Harness()
    h.start_brokers(1, 2)
    h.controlled_shutdown(2)
    assert h.core.state.cluster.brokers[2].in_controlled_shutdown
    metrics = ControllerMetrics(lambda: h.core)
    assert value(metrics, "fencer_controller_active_broker_count") == 2
    assert value(metrics, "fencer_controller_fenced_broker_count") == 0
    assert value(metrics, "fencer_controller_controlled_shutdown_broker_count") == 1


def test_a_shut_down_broker_counts_as_fenced_and_in_controlled_shutdown_until_a_new_incarnation() -> None:
    h = Harness()
    h.start_brokers(1, 2)
    metrics = ControllerMetrics(lambda: h.core)
    assert value(metrics, "fencer_controller_controlled_shutdown_broker_count") == 0
    assert h.heartbeat(2, want_shut_down=True).should_shut_down  # leads nothing: fenced at once
    assert value(metrics, "fencer_controller_fenced_broker_count") == 1
    assert value(metrics, "fencer_controller_controlled_shutdown_broker_count") == 1  # as Kafka's
    h.register(2)  # the same incarnation keeps its flags
    assert value(metrics, "fencer_controller_controlled_shutdown_broker_count") == 1
    h.register(2, generation=1)  # restarted: a new incarnation starts out of controlled shutdown
    assert value(metrics, "fencer_controller_controlled_shutdown_broker_count") == 0
    assert value(metrics, "fencer_controller_fenced_broker_count") == 1


# ---------------------------------------------------------------------------- what the engine committed
@dataclass
class EngineStub:
    isr: IsrChanges
    sizes: LogSizes

    def committed_isr_changes(self) -> IsrChanges:
        return self.isr

    def log_sizes(self) -> LogSizes:
        return self.sizes


def test_committed_isr_changes_and_log_sizes_are_read_from_the_engine_at_each_scrape() -> None:
    engine: EngineStub | None = None
    metrics = ControllerMetrics(lambda: None, lambda: engine)
    text = metrics.render().decode()
    assert "# TYPE fencer_isr_shrinks_total counter" in text and "# TYPE fencer_metadata_log_size_bytes gauge" in text
    assert not any(line.startswith(("fencer_isr_", "fencer_metadata_")) for line in text.splitlines())

    engine = EngineStub(IsrChanges(shrinks=3, expands=1), LogSizes(segments=4096, snapshots=1000))
    assert value(metrics, "fencer_isr_shrinks_total") == 3
    assert value(metrics, "fencer_isr_expands_total") == 1
    assert value(metrics, "fencer_metadata_log_size_bytes", kind="segments") == 4096
    assert value(metrics, "fencer_metadata_log_size_bytes", kind="snapshots") == 1000
    engine.isr = IsrChanges(shrinks=5, expands=1)
    assert value(metrics, "fencer_isr_shrinks_total") == 5


def test_the_metrics_of_a_real_engine_count_a_committed_isr_shrink(tmp_path: Path) -> None:
    engine = ControllerEngine.start(tmp_path / "data", fsync=False, now_ns=0)
    metrics = ControllerMetrics(lambda: engine, lambda: engine)  # as the daemon makes them
    workload(engine, rounds=0)  # brokers 1-3, "orders" with 4 partitions of 3 replicas
    assert engine.counts() == engine.core.counts()
    assert value(metrics, "fencer_controller_active_broker_count") == 3
    assert value(metrics, "fencer_controller_global_partition_count") == 4
    assert value(metrics, "fencer_controller_last_applied_record_offset") == engine.core.state.last_offset
    assert value(metrics, "fencer_isr_shrinks_total") == 0
    finish(engine.decide(56, 2, shrink_request(engine, 0), 0))
    assert value(metrics, "fencer_isr_shrinks_total") == 0  # decided, not yet durable
    engine.commit_now()
    assert value(metrics, "fencer_isr_shrinks_total") == 1
    assert value(metrics, "fencer_isr_expands_total") == 0
    segments = sum(path.stat().st_size for path in (tmp_path / "data").rglob("*.log"))
    assert value(metrics, "fencer_metadata_log_size_bytes", kind="segments") == segments > 0
    assert value(metrics, "fencer_metadata_log_size_bytes", kind="snapshots") == 0
    engine.close()


# ---------------------------------------------------------------------------- response_error_code
@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (BrokerHeartbeatResponse(error_code=ErrorCode.STALE_BROKER_EPOCH), ErrorCode.STALE_BROKER_EPOCH),
        (BrokerHeartbeatResponse(), 0),
        (
            AlterPartitionResponse(
                topics=(
                    AlterPartitionResponseTopicData(
                        partitions=(
                            AlterPartitionResponsePartitionData(partition_index=0),
                            AlterPartitionResponsePartitionData(
                                partition_index=1, error_code=ErrorCode.FENCED_LEADER_EPOCH
                            ),
                            AlterPartitionResponsePartitionData(
                                partition_index=2, error_code=ErrorCode.INVALID_UPDATE_VERSION
                            ),
                        )
                    ),
                )
            ),
            ErrorCode.FENCED_LEADER_EPOCH,
        ),
        (
            AlterPartitionResponse(
                error_code=ErrorCode.STALE_BROKER_EPOCH,
                topics=(
                    AlterPartitionResponseTopicData(
                        partitions=(
                            AlterPartitionResponsePartitionData(
                                partition_index=1, error_code=ErrorCode.FENCED_LEADER_EPOCH
                            ),
                        )
                    ),
                ),
            ),
            ErrorCode.STALE_BROKER_EPOCH,
        ),
        (
            CreateTopicsResponse(
                topics=(
                    CreateTopicsResponseCreatableTopicResult(name="a"),
                    CreateTopicsResponseCreatableTopicResult(name="b", error_code=ErrorCode.TOPIC_ALREADY_EXISTS),
                )
            ),
            ErrorCode.TOPIC_ALREADY_EXISTS,
        ),
        (
            ElectLeadersResponse(
                replica_election_results=(
                    ElectLeadersResponseReplicaElectionResult(
                        topic="t",
                        partition_result=(
                            ElectLeadersResponsePartitionResult(
                                partition_id=0, error_code=ErrorCode.ELECTION_NOT_NEEDED
                            ),
                        ),
                    ),
                )
            ),
            ErrorCode.ELECTION_NOT_NEEDED,
        ),
        (
            DeleteTopicsResponse(
                responses=(
                    DeleteTopicsResponseDeletableTopicResult(name="t", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                )
            ),
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ),
        (
            AlterReplicaStateResponse(
                topics=(
                    AlterReplicaStateResponseTopicResult(
                        name="t",
                        partitions=(
                            AlterReplicaStateResponsePartitionResult(
                                partition_index=0, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER
                            ),
                        ),
                    ),
                )
            ),
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ),
        (
            LeaderAndIsrResponse(
                partition_errors=(
                    LeaderAndIsrResponsePartitionError(partition_index=0),
                    LeaderAndIsrResponsePartitionError(partition_index=1, error_code=ErrorCode.KAFKA_STORAGE_ERROR),
                )
            ),
            ErrorCode.KAFKA_STORAGE_ERROR,
        ),
    ],
)
def test_response_error_code_finds_the_top_level_or_first_nested_error(response: Data, expected: int) -> None:
    assert response_error_code(response) == expected


def test_response_error_code_of_real_responses_from_the_core() -> None:
    h = Harness()
    h.start_brokers(1, 2, 3)
    h.create_topic("t", assignments=[[1, 2, 3]])
    ahead, _ = h.alter_isr("t", 0, [1, 2], leader_epoch=99)  # ahead of the controller's epoch
    assert ahead.error_code == 0
    assert response_error_code(ahead) == ahead.topics[0].partitions[0].error_code != 0
    stale, _ = h.alter_replica_state(2, "t", [0], OFFLINE, broker_epoch=12345)
    assert response_error_code(stale) == ErrorCode.STALE_BROKER_EPOCH
    accepted, _ = h.alter_isr("t", 0, [1, 2])
    assert response_error_code(accepted) == 0
