"""Request probes paced (one gap apart, every kind in turn, one answered NOT_CONTROLLER sent again),
and sent by the broker model in chaos from what it knows, their answers recorded.
"""

from __future__ import annotations

import random

from broker_sim.model import probes, request_probes
from broker_sim.model.broker import BrokerModel
from broker_sim.model.disks import dir_of
from broker_sim.model.events import DATA, Outgoing, RequestProbeAnswered
from broker_sim.model.probes import ProbePlan
from broker_sim.model.request_probes import RequestProbes
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.ids import BrokerEpoch
from protocol.messages.alter_replica_state import OFFLINE, ONLINE, AlterReplicaStateResponse
from protocol.messages.broker_heartbeat import BrokerHeartbeatResponse
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationResponse
from protocol.messages.controlled_shutdown import ControlledShutdownResponse
from protocol.spec import Data

from .helpers import TIMING, TOPIC, TOPIC_ID, FakeFollowers, register
from .probe_fixtures import FOLLOWED, LED_VIEW, ME, REPLICA_STATE_NONE, knowledge, led, partition_answer


def test_pacing_cycles_through_every_kind_one_gap_apart_skipping_what_it_cannot_build() -> None:
    paced = RequestProbes(True, 1, ME, gap_s=2.0)
    known = knowledge(leads=(led(),), hosted=(FOLLOWED, LED_VIEW))
    sent = []
    t = 0.0
    for _ in range(len(probes.KINDS)):
        assert paced.due(t)
        plan = paced.take(t, known)
        assert plan is not None
        sent.append(plan.probe)
        assert not paced.due(t + 1.9) and paced.due(t + 2.0)
        t += 2.0
    assert set(sent) == set(probes.KINDS)
    nothing_known = knowledge(versions={ApiKey.BROKER_HEARTBEAT: 0})
    only = {paced.take(t, nothing_known).probe for _ in range(5)}  # type: ignore[union-attr]
    assert only == {probes.HEARTBEAT_UNREGISTERED}
    assert not RequestProbes(False, 1, ME).due(10.0)


def test_a_probe_answered_not_controller_goes_again_until_the_incarnation_ends_or_too_often() -> None:
    paced = RequestProbes(True, 1, ME)
    plan = paced.take(0.0, knowledge(hosted=(FOLLOWED,)))
    assert plan is not None
    paced.again(plan, 0.5)
    assert not paced.due(0.4) and paced.take(0.5, knowledge()) is plan
    paced.again(plan, 1.0)
    paced.new_incarnation()
    assert paced.take(1.0, knowledge()) is not plan
    for _ in range(request_probes.MAX_NOT_JUDGED):
        paced.again(plan, 2.0)
    assert paced.pending is None


def test_a_large_fleet_probes_each_broker_less_often() -> None:
    assert request_probes.gap_for(5) == request_probes.PROBE_GAP_S
    assert request_probes.gap_for(1000) == 1000 / request_probes.PROBES_PER_S


# ------------------------------------------------------------------ in the broker model
def chaos_broker() -> tuple[BrokerModel, float]:
    model = BrokerModel(ME, 1, TIMING, FakeFollowers(), {TOPIC: TOPIC_ID}, stale_replays=True)
    t = register(model)
    return model, t


def next_probe(model: BrokerModel, t: float) -> tuple[float, ProbePlan]:
    views = {(TOPIC, 0): FOLLOWED}
    for _ in range(40):
        out = model.next_data(t, views, 1)
        if not isinstance(out, float) and out.request_probe is not None:
            return t, out.request_probe
        if not isinstance(out, float):
            model.data_failed(out, t)
            model.events.clear()
        t += 0.25
    raise AssertionError("no request probe")


def test_in_chaos_a_broker_sends_request_probes_and_records_their_answers() -> None:
    model, t = chaos_broker()
    t, plan = next_probe(model, t)
    model.data_answered(_outgoing(plan), _answer(plan, refused=True), t)
    events = [e for e in model.events if isinstance(e, RequestProbeAnswered)]
    assert len(events) == 1 and events[0].plan is plan and not events[0].accepted and events[0].errors
    assert events == model.events  # nothing else: a probe's answer is not the leader's, nor a replay's
    model.events.clear()
    t, plan = next_probe(model, t)
    model.data_failed(_outgoing(plan), t)
    assert [(e.plan, e.errors) for e in model.events if isinstance(e, RequestProbeAnswered)] == [(plan, ())]


def test_a_probe_answered_not_controller_is_not_recorded_and_goes_again() -> None:
    model, t = chaos_broker()
    t, plan = next_probe(model, t)
    model.data_answered(_outgoing(plan), _answer(plan, refused=False), t)
    assert not [e for e in model.events if isinstance(e, RequestProbeAnswered)]
    t, again = next_probe(model, t)
    assert again is plan


def test_no_request_probes_outside_chaos() -> None:
    model = BrokerModel(ME, 1, TIMING, FakeFollowers(), {TOPIC: TOPIC_ID})
    t = register(model)
    for _ in range(40):
        out = model.next_data(t, {(TOPIC, 0): FOLLOWED}, 1)
        assert isinstance(out, float) or out.request_probe is None
        if not isinstance(out, float):
            model.data_failed(out, t)
        t += 0.25


def _outgoing(plan: ProbePlan) -> Outgoing:
    return Outgoing(DATA, "request-probe", plan.version, plan.body, request_probe=plan)


def _answer(plan: ProbePlan, refused: bool) -> Data:
    """A refusal (INVALID_REQUEST where a partition is answered, else the API's top-level error), or
    NOT_CONTROLLER."""
    code = ErrorCode.INVALID_REQUEST if refused else ErrorCode.NOT_CONTROLLER
    if plan.api_key == ApiKey.ALTER_PARTITION:
        return partition_answer(code)
    if plan.api_key == ApiKey.BROKER_HEARTBEAT:
        return BrokerHeartbeatResponse(error_code=code)
    if plan.api_key == ApiKey.CONTROLLED_SHUTDOWN:
        return ControlledShutdownResponse(error_code=code)
    if plan.api_key == ApiKey.BROKER_REGISTRATION:
        return BrokerRegistrationResponse(error_code=code)
    return AlterReplicaStateResponse(error_code=code)


# ------------------------------------------------------------------ what the broker model knows and does
def unfenced_heartbeat(model: BrokerModel, t: float) -> None:
    out = model.next_lifecycle(t)
    assert isinstance(out, Outgoing) and out.purpose == "heartbeat"
    model.lifecycle.heartbeat_sent(t)
    model.lifecycle_answered(out, BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False), t + 0.01)


def test_the_broker_knows_when_it_was_last_heard_unfenced_and_which_replica_states_are_sure() -> None:
    model, t = chaos_broker()
    model.views = {(TOPIC, 0): FOLLOWED}
    assert model._knowledge(t).heard_at is None  # the heartbeat that unfenced it was never sent by a shell
    t = model.lifecycle.next_heartbeat
    unfenced_heartbeat(model, t)
    known = model._knowledge(t + 0.5)
    assert (known.heard_at, known.now, known.session_timeout_s) == (t, t + 0.5, TIMING.session_timeout_s)
    assert known.replica_states == {(TOPIC, 0): ONLINE}
    model.fail_dir(dir_of(TOPIC, 0))
    assert model._knowledge(t + 0.5).replica_states == {}  # its OFFLINE not answered yet
    out = model._replica_state(*model.disks.pending[0])
    model.data_answered(out, REPLICA_STATE_NONE, t + 0.6)
    assert model._knowledge(t + 0.7).replica_states == {(TOPIC, 0): OFFLINE}
    model.repair_dir(dir_of(TOPIC, 0), t + 0.8)
    assert model._knowledge(t + 0.9).replica_states == {}  # repaired: ONLINE pending, and the dir failed once
    model.begin_shutdown("rpc", t + 1.0)
    assert model._knowledge(t + 1.0).heard_at is None


def test_an_accepted_duplicate_registration_makes_the_broker_register_its_own_incarnation_again() -> None:
    model, t = chaos_broker()
    t = model.lifecycle.next_heartbeat
    unfenced_heartbeat(model, t)
    plan = built_from(model, probes.REGISTRATION_DUPLICATE, t + 0.2)
    model.data_answered(_outgoing(plan), BrokerRegistrationResponse(broker_epoch=BrokerEpoch(500)), t + 0.3)
    [event] = [e for e in model.events if isinstance(e, RequestProbeAnswered)]
    assert event.accepted and event.plan.detail["granted_broker_epoch"] == 500
    assert event.plan.detail["answered_ms_after_heard"] == 300
    assert not model.lifecycle.registered and model.heard_at is None
    out = model.next_lifecycle(t + 0.3)
    assert isinstance(out, Outgoing) and out.purpose == "register"
    assert isinstance(out.body, BrokerRegistrationRequest) and out.body.incarnation_id == model.lifecycle.incarnation_id


def test_row_bs_answer_is_journalled_and_a_standbys_goes_again() -> None:
    model, t = chaos_broker()
    model.leadership.led[(TOPIC, 1)] = led()
    plan = built_from(model, probes.ALTER_PARTITION_NEWER, t)
    model.data_answered(_outgoing(plan), partition_answer(top=ErrorCode.NOT_CONTROLLER), t)
    assert not model.events and model.request_probes.pending is plan
    model.data_answered(_outgoing(plan), partition_answer(ErrorCode.NOT_CONTROLLER), t)
    [event] = [e for e in model.events if isinstance(e, RequestProbeAnswered)]
    assert (event.errors, event.accepted) == ((0, 41), False)


def built_from(model: BrokerModel, kind: str, t: float) -> ProbePlan:
    plan = request_probes.build(kind, random.Random(1), model._knowledge(t))
    assert plan is not None
    return plan
