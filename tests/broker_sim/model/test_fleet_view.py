"""What a leader sees of its followers: the models of this process, or only the lag of others."""

from __future__ import annotations

from broker_sim.model.broker import BrokerModel
from broker_sim.model.fleet_view import NOT_FETCHING, FleetView
from broker_sim.model.lag import LagModel
from broker_sim.model.leadership import ProbeTarget

from .helpers import TIMING, TOPIC, TOPIC_ID, register, view


def fleet() -> tuple[FleetView, dict[int, BrokerModel], LagModel]:
    models: dict[int, BrokerModel] = {}
    lag = LagModel(0, mean_gap_s=5.0, warmup_s=1.0, horizon_s=200.0)
    fleet_view = FleetView(models, lag, TIMING)
    models[2] = BrokerModel(2, 0, TIMING, fleet_view, {TOPIC: TOPIC_ID})
    return fleet_view, models, lag


def test_a_follower_of_this_process_is_caught_up_when_running_hosting_and_not_lagging() -> None:
    fleet_view, models, lag = fleet()
    follower = models[2]
    assert fleet_view.state(2, TOPIC, 0, 0.0) == NOT_FETCHING  # not started
    t = register(follower, epoch=77)
    follower.next_data(t, {(TOPIC, 0): view(leader=1)}, 1)
    quiet = next(x / 10 for x in range(10, 2000) if not lag.lagging(2, TOPIC, 0, x / 10))
    state = fleet_view.state(2, TOPIC, 0, max(quiet, t))
    assert state.caught_up and state.eligible and state.epoch == 77
    lagging = next(x / 10 for x in range(10, 2000) if lag.lagging(2, TOPIC, 0, x / 10))
    assert not fleet_view.state(2, TOPIC, 0, lagging).caught_up
    assert not fleet_view.state(2, TOPIC, 1, max(quiet, t)).caught_up  # a replica it does not host
    follower.pause(1000.0, 0.0)
    assert fleet_view.state(2, TOPIC, 0, max(quiet, t)) == NOT_FETCHING


def test_a_follower_of_another_process_is_seen_through_its_lag_only() -> None:
    fleet_view, _, lag = fleet()
    for tenth in range(0, 600):
        state = fleet_view.state(9, TOPIC, 0, tenth / 10)
        assert state.caught_up == (not lag.lagging(9, TOPIC, 0, tenth / 10))
        assert state.eligible and state.epoch == -1


def test_a_follower_the_controller_must_refuse_is_named_with_the_reason_and_the_epoch_a_stale_view_has() -> None:
    fleet_view, models, _ = fleet()
    follower = models[2]
    assert fleet_view.ineligible(2, TOPIC, 0, 0.0) is None  # not registered: nothing to name
    t = register(follower, epoch=77)
    hosted = {(TOPIC, 0): view(leader=1)}
    follower.next_data(t, hosted, 1)
    assert fleet_view.ineligible(2, TOPIC, 0, t) is None  # active, online, first incarnation
    assert fleet_view.ineligible(9, TOPIC, 0, t) is None  # another process's broker: never probed
    follower.pause(t + 100, t)
    assert fleet_view.ineligible(2, TOPIC, 0, t + 1) is None  # paused, not yet fenced
    late = t + TIMING.session_timeout_s + TIMING.heartbeat_s + 0.1
    assert fleet_view.ineligible(2, TOPIC, 0, late) == ProbeTarget(2, 77, "fenced")
    follower.pause(0.0, t)
    follower.begin_shutdown("rpc", t)
    assert fleet_view.ineligible(2, TOPIC, 0, t) == ProbeTarget(2, 77, "shutting-down")
    follower.end_incarnation(t)
    assert fleet_view.ineligible(2, TOPIC, 0, t) is None  # down: nothing a leader could name
    t = register(follower, t + 1, epoch=90)
    assert fleet_view.ineligible(2, TOPIC, 0, t) == ProbeTarget(2, 77, "previous-epoch")
    later = follower.ready_at + TIMING.session_timeout_s
    assert fleet_view.ineligible(2, TOPIC, 0, later) is None
