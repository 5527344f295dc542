"""A broker's lifecycle channel, driven without sockets: the order of requests, what each carries,
and every reaction of the lifecycle to the controller's answers."""

from __future__ import annotations

import uuid

import pytest

from broker_sim.model.broker import BrokerModel
from broker_sim.model.events import FencedSeen, Registered, ShapeProblem, Unfenced
from broker_sim.model.lifecycle import Phase
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse, ApiVersionsResponseApiVersion
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationResponse
from protocol.messages.describe_cluster import DescribeClusterRequest, DescribeClusterResponse
from protocol.security_protocol import SecurityProtocol

from .helpers import TIMING, FakeFollowers, controller_versions, register, take


def model(broker_id: int = 1, seed: int = 0) -> BrokerModel:
    return BrokerModel(broker_id, seed, TIMING, FakeFollowers(), {})


def test_an_incarnation_describes_negotiates_registers_and_is_unfenced_once_caught_up() -> None:
    broker = model()
    broker.start(0.0, "127.0.0.1", 4000)
    out = take(broker.next_lifecycle(0.0))
    assert isinstance(out.body, DescribeClusterRequest)
    broker.lifecycle_answered(out, DescribeClusterResponse(cluster_id="c1"), 0.0)
    out = take(broker.next_lifecycle(0.0))
    assert isinstance(out.body, ApiVersionsRequest)
    broker.lifecycle_answered(out, controller_versions(), 0.0)
    out = take(broker.next_lifecycle(0.0))
    assert isinstance(out.body, BrokerRegistrationRequest)
    assert out.body.cluster_id == "c1" and out.body.broker_id == 1
    assert [
        (listener.name, listener.host, listener.port, listener.security_protocol) for listener in out.body.listeners
    ] == [("PLAINTEXT", "127.0.0.1", 4000, SecurityProtocol.PLAINTEXT)]
    broker.lifecycle_answered(out, BrokerRegistrationResponse(broker_epoch=42), 0.1)
    assert broker.events == [Registered(out.body.incarnation_id, 42, out.body.log_dirs)]

    first = take(broker.next_lifecycle(0.1))
    assert isinstance(first.body, BrokerHeartbeatRequest)
    assert (first.body.broker_epoch, first.body.current_metadata_offset) == (42, 41)  # not caught up yet
    broker.lifecycle_answered(first, BrokerHeartbeatResponse(is_fenced=True), 0.1)
    assert broker.next_lifecycle(0.1) == 0.1 + TIMING.fenced_heartbeat_s
    second = take(broker.next_lifecycle(0.4))
    assert isinstance(second.body, BrokerHeartbeatRequest) and second.body.current_metadata_offset == 42
    broker.lifecycle_answered(second, BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False), 0.4)
    assert broker.lifecycle.phase == Phase.ACTIVE
    assert broker.events[-1] == Unfenced(42)


def test_a_tls_listener_is_registered_as_ssl_in_every_incarnation() -> None:
    broker = model()
    for incarnation in range(2):
        t = 100.0 * incarnation
        broker.start(t, "broker-1.example.com", 4000 + incarnation, SecurityProtocol.SSL)
        broker.lifecycle_answered(take(broker.next_lifecycle(t)), DescribeClusterResponse(cluster_id="c1"), t)
        broker.lifecycle_answered(take(broker.next_lifecycle(t)), controller_versions(), t)
        out = take(broker.next_lifecycle(t))
        assert isinstance(out.body, BrokerRegistrationRequest)
        assert [(item.name, item.host, item.port, item.security_protocol) for item in out.body.listeners] == [
            ("SSL", "broker-1.example.com", 4000 + incarnation, SecurityProtocol.SSL)
        ]
        broker.lifecycle_answered(out, BrokerRegistrationResponse(broker_epoch=42 + incarnation), t)
        broker.end_incarnation(t + 1)


def registered_at_42() -> BrokerModel:
    broker = model()
    broker.start(0.0, "127.0.0.1", 4000)
    broker.lifecycle_answered(take(broker.next_lifecycle(0.0)), DescribeClusterResponse(cluster_id="c1"), 0.0)
    broker.lifecycle_answered(take(broker.next_lifecycle(0.0)), controller_versions(), 0.0)
    broker.lifecycle_answered(take(broker.next_lifecycle(0.0)), BrokerRegistrationResponse(broker_epoch=42), 0.1)
    broker.events.clear()
    return broker


@pytest.mark.parametrize(
    ("answer", "what"),
    [
        (BrokerHeartbeatResponse(is_caught_up=False, is_fenced=False), "unfenced the broker"),
        (BrokerHeartbeatResponse(is_caught_up=True, is_fenced=True), "answered IsCaughtUp"),
    ],
)
def test_an_answer_that_takes_a_lagging_heartbeat_as_caught_up_is_a_problem(
    answer: BrokerHeartbeatResponse, what: str
) -> None:
    broker = registered_at_42()
    first = take(broker.next_lifecycle(0.1))  # metadata offset 41: below its registration at 42
    broker.lifecycle_answered(first, answer, 0.1)
    problems = [event for event in broker.events if isinstance(event, ShapeProblem)]
    assert [(p.api_key, p.version) for p in problems] == [(ApiKey.BROKER_HEARTBEAT, first.version)]
    assert problems[0].reason.startswith(what) and "offset 41 is below its registration 42" in problems[0].reason


def test_the_right_answers_to_heartbeats_before_and_after_catching_up_are_no_problem() -> None:
    broker = registered_at_42()
    broker.lifecycle_answered(take(broker.next_lifecycle(0.1)), BrokerHeartbeatResponse(is_fenced=True), 0.1)
    second = take(broker.next_lifecycle(0.4))  # offset 42: caught up
    broker.lifecycle_answered(second, BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False), 0.4)
    assert broker.events == [Unfenced(42)]


def test_each_incarnation_has_a_fresh_incarnation_id_from_the_seed() -> None:
    def incarnations(seed: int) -> list[uuid.UUID]:
        broker = model(seed=seed)
        ids = []
        for _ in range(3):
            register(broker)
            ids.append(broker.lifecycle.incarnation_id)
            broker.end_incarnation(5.0)
        return ids

    assert incarnations(1) == incarnations(1)
    assert len(set(incarnations(1))) == 3
    assert incarnations(1) != incarnations(2)


def test_heartbeats_are_due_on_a_fixed_schedule_after_the_seeded_phase() -> None:
    broker = model()
    t = register(broker)
    first_due = broker.lifecycle.next_heartbeat
    assert t + 0.25 * TIMING.heartbeat_s <= first_due <= t + TIMING.heartbeat_s
    out = take(broker.next_lifecycle(first_due + 0.3))  # sent late
    assert out.due == first_due
    broker.lifecycle_answered(out, BrokerHeartbeatResponse(is_fenced=False), first_due + 0.4)
    assert broker.lifecycle.next_heartbeat == first_due + TIMING.heartbeat_s  # the schedule, not the answer


def test_duplicate_registration_retries_the_same_incarnation_after_a_heartbeat_interval() -> None:
    broker = model()
    broker.start(0.0, "h", 1)
    for answer in (DescribeClusterResponse(cluster_id="c"), controller_versions()):
        broker.lifecycle_answered(take(broker.next_lifecycle(0.0)), answer, 0.0)
    out = take(broker.next_lifecycle(0.0))
    broker.lifecycle_answered(out, BrokerRegistrationResponse(error_code=ErrorCode.DUPLICATE_BROKER_REGISTRATION), 1.0)
    assert broker.next_lifecycle(1.0) == 1.0 + TIMING.heartbeat_s
    again = take(broker.next_lifecycle(2.0))
    assert isinstance(again.body, BrokerRegistrationRequest) and isinstance(out.body, BrokerRegistrationRequest)
    assert again.body.incarnation_id == out.body.incarnation_id


def test_inconsistent_cluster_id_starts_again_from_describe_cluster() -> None:
    broker = model()
    broker.start(0.0, "h", 1)
    for answer in (DescribeClusterResponse(cluster_id="c"), controller_versions()):
        broker.lifecycle_answered(take(broker.next_lifecycle(0.0)), answer, 0.0)
    out = take(broker.next_lifecycle(0.0))
    broker.lifecycle_answered(out, BrokerRegistrationResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID), 0.0)
    assert isinstance(take(broker.next_lifecycle(10.0)).body, DescribeClusterRequest)


def test_an_unsupported_api_versions_version_is_retried_at_the_controllers_highest() -> None:
    broker = model(broker_id=1)
    broker.lifecycle.first_contact[18] = 4
    broker.start(0.0, "h", 1)
    broker.lifecycle_answered(take(broker.next_lifecycle(0.0)), DescribeClusterResponse(cluster_id="c"), 0.0)
    out = take(broker.next_lifecycle(0.0))
    assert out.version == 4
    fallback = ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        api_keys=(ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=2),),
    )
    broker.lifecycle_answered(out, fallback, 0.0)
    assert take(broker.next_lifecycle(0.0)).version == 2


def test_an_api_versions_refused_with_another_error_is_a_bad_answer_and_retried() -> None:
    broker = model(broker_id=1)
    broker.lifecycle.first_contact[18] = 2
    broker.start(0.0, "h", 1)
    broker.lifecycle_answered(take(broker.next_lifecycle(0.0)), DescribeClusterResponse(cluster_id="c"), 0.0)
    out = take(broker.next_lifecycle(0.0))
    broker.lifecycle_answered(out, ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST), 0.0)
    problems = [event for event in broker.events if isinstance(event, ShapeProblem)]
    assert [(p.api_key, p.version) for p in problems] == [(18, 2)] and "INVALID_REQUEST" in problems[0].reason
    again = take(broker.next_lifecycle(10.0))
    assert isinstance(again.body, ApiVersionsRequest)


def test_stale_broker_epoch_on_a_heartbeat_registers_the_same_incarnation_again() -> None:
    broker = model()
    t = register(broker)
    incarnation = broker.lifecycle.incarnation_id
    out = take(broker.next_lifecycle(t + 5))
    broker.lifecycle_answered(out, BrokerHeartbeatResponse(error_code=ErrorCode.STALE_BROKER_EPOCH), t + 5)
    again = take(broker.next_lifecycle(t + 5))
    assert isinstance(again.body, BrokerRegistrationRequest) and again.body.incarnation_id == incarnation


def test_a_failed_heartbeat_is_retried_within_half_an_interval() -> None:
    broker = model()
    t = register(broker) + 5
    out = take(broker.next_lifecycle(t))
    broker.lifecycle_failed(out, t)
    retry = broker.next_lifecycle(t)
    assert isinstance(retry, float) and t < retry <= t + TIMING.heartbeat_s / 2


def test_fenced_after_being_unfenced_is_recorded_as_intended_only_during_a_shutdown() -> None:
    broker = model()
    t = register(broker) + 5
    out = take(broker.next_lifecycle(t))
    broker.lifecycle_answered(out, BrokerHeartbeatResponse(is_fenced=True), t)
    seen = [e for e in broker.events if isinstance(e, FencedSeen)]
    assert len(seen) == 1 and not seen[0].intended

    broker = model()
    t = register(broker) + 5
    broker.begin_shutdown("rpc", t)
    out = take(broker.next_lifecycle(t))
    broker.lifecycle_answered(out, BrokerHeartbeatResponse(is_fenced=True), t)
    assert [e.intended for e in broker.events if isinstance(e, FencedSeen)] == [True]
