"""Admin probes: each kind built from what the admin knows, at every version of its range,
refused by the real controller core with the error the checker expects (nothing written), judged
from its answer, and paced."""

from __future__ import annotations

import dataclasses
import itertools
import random
import uuid

import pytest

from broker_sim.check.admin_probe_rules import wrong_admin_answer
from broker_sim.journal import AdminProbe
from broker_sim.model import admin_probes
from broker_sim.model.admin_probes import ALL_KINDS, KINDS, RANGES, AdminKnowledge, AdminProbePlan, AdminProbes
from broker_sim.model.probe_kinds import PROBE_KINDS
from broker_sim.model.probes import UNKNOWN_PARTITION, UNREGISTERED_BASE
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicResult,
)
from protocol.messages.delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseDeletableTopicResult,
)
from protocol.messages.elect_leaders import (
    PREFERRED,
    UNCLEAN,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
)
from protocol.registry import api, decode_request, decode_response, encode_request, encode_response
from protocol.spec import Data
from tests.controller.harness import Harness

SEED = 7
KNOWN = AdminKnowledge(SEED, ("fleet-7-0", "fleet-7-1"), (0, 1, 2), (("fleet-7-0", 0), ("fleet-7-1", 2)))
NOTHING = AdminKnowledge(SEED, (), (0, 1, 2), ())


def build(kind: str, version: int, seed: int = 0, known: AdminKnowledge = KNOWN) -> AdminProbePlan:
    plan = admin_probes.build(kind, version, 3, random.Random(seed), known)
    assert plan is not None
    return plan


def cases() -> list[tuple[str, int, int]]:
    """Every kind at every version of its range, with a few seeds (the random choices within a kind)."""
    return [
        (kind, version, seed)
        for kind in KINDS
        for version in range(RANGES[kind].lowest, RANGES[kind].highest + 1)
        for seed in range(3)
    ]


def wire(body: Data, version: int) -> Data:
    """`body` as the controller decodes it at `version`."""
    return decode_request(encode_request(body, version, 1)[4:]).body


def harness() -> Harness:
    """A controller with the admin's knowledge true: brokers 0-2 active, topics fleet-7-0 and
    fleet-7-1 of three partitions each, RF 3."""
    h = Harness()
    h.start_brokers(0, 1, 2)
    for name in KNOWN.topics:
        h.create_topic(name, partitions=3, replication_factor=3)
    return h


@pytest.mark.parametrize(("kind", "version", "seed"), cases())
def test_a_correct_controller_refuses_each_probe_with_the_error_the_checker_expects(
    kind: str, version: int, seed: int
) -> None:
    h = harness()
    plan = build(kind, version, seed)
    assert (plan.api_key, plan.version) == (admin_probes.API_OF[kind], version)
    written = len(h.log)
    response, records = h.send(wire(plan.body, version), version)
    decoded = decode_response(encode_response(response, version, 1)[4:], plan.api_key, version)[1]
    errors, accepted = admin_probes.judge(decoded)
    entry = AdminProbe(2, 1, api(plan.api_key).name, version, kind, errors, accepted, plan.detail)
    assert (accepted, wrong_admin_answer(entry), records, len(h.log)) == (False, None, [], written), errors


def test_the_probes_name_what_makes_them_wrong() -> None:
    taken = build(admin_probes.CREATE_TAKEN, 7).body
    assert isinstance(taken, CreateTopicsRequest) and taken.topics[0].name in KNOWN.topics
    factor = build(admin_probes.CREATE_REPLICATION_FACTOR, 2).body
    assert isinstance(factor, CreateTopicsRequest) and factor.topics[0].replication_factor == 32767
    assert factor.topics[0].name == "fleet-7-admin-probe-3"
    for seed in range(20):
        plan = build(admin_probes.CREATE_UNREGISTERED_REPLICA, 5, seed)
        assert isinstance(plan.body, CreateTopicsRequest)
        replicas = plan.body.topics[0].assignments[0].broker_ids
        strangers = [b for b in replicas if b < 0 or b >= UNREGISTERED_BASE]
        assert len(strangers) == 1 and set(replicas) - set(strangers) <= set(KNOWN.brokers)
    empty = build(admin_probes.CREATE_EMPTY_REPLICAS, 3).body
    assert isinstance(empty, CreateTopicsRequest) and empty.topics[0].assignments[0].broker_ids == ()
    partition = build(admin_probes.ELECT_UNKNOWN_PARTITION, 1).body
    assert isinstance(partition, ElectLeadersRequest) and partition.topic_partitions is not None
    assert partition.topic_partitions[0].partitions[0] >= UNKNOWN_PARTITION
    unclean = build(admin_probes.ELECT_UNCLEAN_LED, 1).body
    assert isinstance(unclean, ElectLeadersRequest) and unclean.election_type == UNCLEAN
    assert unclean.topic_partitions is not None
    assert (unclean.topic_partitions[0].topic, unclean.topic_partitions[0].partitions[0]) in KNOWN.led


def test_malformed_assignments_name_listed_brokers_in_a_shape_kafka_refuses() -> None:
    shapes = set()
    for seed in range(30):
        body = build(admin_probes.CREATE_BAD_PARTITION_INDEXES, 4, seed).body
        assert isinstance(body, CreateTopicsRequest)
        indexes = tuple(a.partition_index for a in body.topics[0].assignments)
        assert indexes != tuple(range(len(indexes)))
        shapes.add(indexes)
        assert {b for a in body.topics[0].assignments for b in a.broker_ids} <= set(KNOWN.brokers)
        repeated = build(admin_probes.CREATE_REPEATED_REPLICA, 4, seed).body
        assert isinstance(repeated, CreateTopicsRequest)
        (only,) = repeated.topics[0].assignments
        assert len(only.broker_ids) == 2 and len(set(only.broker_ids)) == 1
        uneven = build(admin_probes.CREATE_UNEVEN_REPLICAS, 4, seed).body
        assert isinstance(uneven, CreateTopicsRequest)
        assert [len(a.broker_ids) for a in uneven.topics[0].assignments] == [2, 1]
    assert shapes == {(0, 0), (1,), (0, 2)}
    one_broker = AdminKnowledge(SEED, (), (4,), ())
    assert admin_probes.build(admin_probes.CREATE_UNEVEN_REPLICAS, 4, 0, random.Random(0), one_broker) is None


def test_deletions_name_an_unknown_topic_by_name_before_v6_and_mostly_by_id_at_v6() -> None:
    for version in range(1, 6):
        plan = build(admin_probes.DELETE_UNKNOWN, version)
        assert isinstance(plan.body, DeleteTopicsRequest) and plan.body.topic_names and not plan.detail["by_id"]
    by_id = [build(admin_probes.DELETE_UNKNOWN, 6, seed).detail["by_id"] for seed in range(40)]
    assert 20 < sum(by_id) < 40
    plan = next(build(admin_probes.DELETE_UNKNOWN, 6, seed) for seed in range(40) if by_id[seed])
    assert (
        isinstance(plan.body, DeleteTopicsRequest)
        and uuid.UUID(plan.detail["topic_id"]) == plan.body.topics[0].topic_id
    )


def test_v0_elections_are_preferred_and_an_unclean_one_needs_v1_and_a_led_partition() -> None:
    for seed in range(10):
        body = build(admin_probes.ELECT_UNKNOWN_TOPIC, 0, seed).body
        assert isinstance(body, ElectLeadersRequest) and body.election_type == PREFERRED
    assert admin_probes.build(admin_probes.ELECT_UNCLEAN_LED, 0, 0, random.Random(0), KNOWN) is None
    assert admin_probes.build(admin_probes.ELECT_UNCLEAN_LED, 1, 0, random.Random(0), NOTHING) is None
    assert admin_probes.build(admin_probes.CREATE_TAKEN, 7, 0, random.Random(0), NOTHING) is None


def test_only_a_fresh_name_written_for_real_is_a_topic_the_admin_deletes_if_accepted() -> None:
    assert build(admin_probes.CREATE_TAKEN, 7).creates is None
    plans = [build(admin_probes.CREATE_EMPTY_REPLICAS, 7, seed) for seed in range(40)]
    assert {plan.creates for plan in plans if not plan.detail["validate_only"]} == {"fleet-7-admin-probe-3"}
    assert {plan.creates for plan in plans if plan.detail["validate_only"]} == {None}


def test_judge_takes_the_top_level_error_then_each_topic_or_partition() -> None:
    created = CreateTopicsResponse(topics=(CreateTopicsResponseCreatableTopicResult(name="x", error_code=36),))
    assert admin_probes.judge(created) == ([0, 36], False)
    created = CreateTopicsResponse(topics=(CreateTopicsResponseCreatableTopicResult(name="x"),))
    assert admin_probes.judge(created) == ([0, 0], True)
    deleted = DeleteTopicsResponse(responses=(DeleteTopicsResponseDeletableTopicResult(name="x", error_code=3),))
    assert admin_probes.judge(deleted) == ([0, 3], False)
    partition = ElectLeadersResponsePartitionResult(partition_id=0, error_code=ErrorCode.NONE)
    elected = ElectLeadersResponse(
        replica_election_results=(ElectLeadersResponseReplicaElectionResult(topic="x", partition_result=(partition,)),)
    )
    assert admin_probes.judge(elected) == ([0, 0], True)
    assert admin_probes.judge(ElectLeadersResponse(error_code=44)) == ([44], False)
    with pytest.raises(TypeError):
        admin_probes.judge(CreateTopicsRequest(topics=()))


def test_pacing_cycles_every_kind_spreads_versions_and_is_seeded() -> None:
    def run(seed: int) -> list[tuple[str, int, float]]:
        probes, t, out = AdminProbes(seed), 0.0, []
        probes.start(t)
        while len(out) < 3 * len(KINDS):
            t = probes.next_at
            assert probes.due(t)
            plan = probes.take(t, KNOWN)
            assert plan is not None
            out.append((plan.probe, plan.version, t))
        return out

    first = run(1)
    assert first == run(1) and first != run(2)
    assert {kind for kind, _, _ in first} == set(KINDS)
    for kind in KINDS:
        seen = {version for probe, version, _ in first if probe == kind}
        assert seen <= set(range(RANGES[kind].lowest, RANGES[kind].highest + 1))
    for api_key in (ApiKey.CREATE_TOPICS, ApiKey.ELECT_LEADERS, ApiKey.DELETE_TOPICS):
        versions = [version for probe, version, _ in first if admin_probes.API_OF[probe] == api_key]
        assert len(set(versions)) >= min(3, len(versions))
    gaps = [b - a for (_, _, a), (_, _, b) in itertools.pairwise(first)]
    assert all(admin_probes.GAP_S[0] <= gap <= admin_probes.GAP_S[1] for gap in gaps)


def test_pacing_skips_a_kind_it_cannot_build_and_is_off_outside_chaos() -> None:
    probes = AdminProbes(1)
    kinds = {plan.probe for _ in range(20) if (plan := probes.take(0.0, NOTHING)) is not None}
    assert kinds and not kinds & {
        admin_probes.CREATE_TAKEN,
        admin_probes.ELECT_UNKNOWN_PARTITION,
        admin_probes.ELECT_UNCLEAN_LED,
    }
    assert not AdminProbes(1, enabled=False).due(100.0)


def test_a_leaderless_partition_is_asked_for_first_whenever_one_is_known() -> None:
    known = dataclasses.replace(KNOWN, leaderless=(("fleet-1-0", 2),))
    probes = AdminProbes(1)
    plans = [probes.take(float(t), known) for t in range(6)]
    assert all(plan is not None and plan.probe == admin_probes.ELECT_UNCLEAN_LEADERLESS for plan in plans)
    for plan in plans:
        assert plan is not None and plan.version in (1, 2)  # v0 has no election type
        assert isinstance(plan.body, ElectLeadersRequest) and plan.body.election_type == UNCLEAN
        assert [(t.topic, list(t.partitions)) for t in plan.body.topic_partitions or ()] == [("fleet-1-0", [2])]
    assert len({plan.version for plan in plans if plan is not None}) == 2
    # none known: the cycle, which does not hold it
    assert probes.take(10.0, KNOWN).probe != admin_probes.ELECT_UNCLEAN_LEADERLESS  # type: ignore[union-attr]


def test_every_kind_is_listed_for_the_rule_map() -> None:
    listed = {name.split(":", 1)[1] for name in PROBE_KINDS if name.startswith("admin_probe:")}
    assert listed == set(ALL_KINDS)
