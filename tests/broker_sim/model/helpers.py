"""Building blocks for driving the pure broker model without sockets."""

from __future__ import annotations

import uuid

from broker_sim.model.broker import BrokerModel
from broker_sim.model.events import Outgoing
from broker_sim.model.leadership import FollowerState, ProbeTarget
from broker_sim.model.timing import Timing, timing_for
from broker_sim.model.views import PartitionView
from controller.ops.served import INBOUND_API_KEYS
from protocol.messages.api_versions import ApiVersionsResponse, ApiVersionsResponseApiVersion
from protocol.messages.broker_heartbeat import BrokerHeartbeatResponse
from protocol.messages.broker_registration import BrokerRegistrationResponse
from protocol.messages.describe_cluster import DescribeClusterResponse
from protocol.registry import api

TIMING: Timing = timing_for(1000, 3000)
TOPIC = "orders"
TOPIC_ID = uuid.UUID(int=0xABC)


class FakeFollowers:
    """Followers as a test sets them: caught up, eligible and epoch per broker id."""

    def __init__(self) -> None:
        self.caught_up: dict[int, bool] = {}
        self.eligible: dict[int, bool] = {}
        self.epochs: dict[int, int] = {}
        self.ineligibles: dict[int, ProbeTarget] = {}

    def ineligible(self, follower: int, topic: str, partition: int, t: float) -> ProbeTarget | None:
        return self.ineligibles.get(follower)

    def state(self, follower: int, topic: str, partition: int, t: float) -> FollowerState:
        return FollowerState(
            self.caught_up.get(follower, True), self.eligible.get(follower, True), self.epochs.get(follower, -1)
        )


def controller_versions() -> ApiVersionsResponse:
    return ApiVersionsResponse(
        api_keys=tuple(
            ApiVersionsResponseApiVersion(
                api_key=key, min_version=api(key).versions.lowest, max_version=api(key).versions.highest
            )
            for key in sorted(INBOUND_API_KEYS)
        )
    )


def view(
    leader: int = 1,
    leader_epoch: int = 0,
    partition_epoch: int = 0,
    isr: tuple[int, ...] = (1, 2, 3),
    replicas: tuple[int, ...] = (1, 2, 3),
    partition: int = 0,
    **flags: bool,
) -> PartitionView:
    return PartitionView(TOPIC, TOPIC_ID, partition, leader, leader_epoch, isr, partition_epoch, replicas, **flags)


def take(out: Outgoing | float) -> Outgoing:
    assert isinstance(out, Outgoing), f"expected a request, the model waits until {out}"
    return out


def register(model: BrokerModel, t: float = 0.0, epoch: int = 100, port: int = 9999) -> float:
    """Run an incarnation through DescribeCluster, ApiVersions, registration and unfencing; return the time."""
    model.start(t, "127.0.0.1", port)
    out = take(model.next_lifecycle(t))
    model.lifecycle_answered(out, DescribeClusterResponse(cluster_id="c1", controller_id=1), t)
    out = take(model.next_lifecycle(t))
    model.lifecycle_answered(out, controller_versions(), t)
    out = take(model.next_lifecycle(t))
    model.lifecycle_answered(out, BrokerRegistrationResponse(broker_epoch=epoch), t)
    out = take(model.next_lifecycle(t))
    model.lifecycle_answered(out, BrokerHeartbeatResponse(is_caught_up=False, is_fenced=True), t)
    t += TIMING.fenced_heartbeat_s
    out = take(model.next_lifecycle(t))
    model.lifecycle_answered(out, BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False), t)
    model.events.clear()
    return t
