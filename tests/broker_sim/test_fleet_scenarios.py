"""Each scenario, briefly, against the real daemon: the traffic mix it must produce, no bad answers,
no broker fenced by a late heartbeat, stale replays sent and all rejected (acceptance 1).

Every scenario runs once per module (18 s each, 5 brokers, 3 topics x 4 partitions, RF 3, the
daemon's session timeout 3 s); the last test checks that every inbound API of protocol.md appears
across the four.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from broker_sim.check import check
from broker_sim.shell.fleet import SCENARIOS
from controller.ops.served import INBOUND_API_KEYS
from protocol.api_keys import ApiKey
from protocol.registry import api

from .fleet_runs import FleetRun, scenario_run


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fleet")


def check_common(run: FleetRun, brokers: int = 5) -> None:
    """What every scenario must show: it ran, every broker registered and heartbeat, topics were
    created and pushed to the brokers, nothing broke the protocol, nobody was fenced by accident."""
    assert run.outcome.finished and run.outcome.unreachable is None
    kinds = [entry.kind for entry in run.entries]
    assert kinds[0] == "run" and kinds[-1] == "end" and run.entries[-1].finished  # type: ignore[union-attr]
    assert {entry.broker for entry in run.kinds("registered")} == set(range(brokers))
    assert len(run.kinds("topic_created")) >= 3
    assert run.kinds("bad_answer") == []
    assert [fenced for fenced in run.kinds("fenced") if not fenced.intended] == []
    requests = run.stats.requests_by_api
    for name in ("DescribeCluster", "ApiVersions", "BrokerRegistration", "BrokerHeartbeat", "CreateTopics"):
        assert requests[name] > 0, name
    assert run.stats.control_requests_by_api["LeaderAndIsr"] > 0
    assert not [key for key in run.stats.errors_by_code if key.endswith(("BAD_ANSWER", "UNKNOWN_SERVER_ERROR"))]


async def test_steady_registers_creates_topics_and_churns_isrs_without_a_single_error(root: Path) -> None:
    run = await scenario_run(root, "steady")
    check_common(run)
    # every answer without an error; a request the broker gave up waiting for (NETWORK_EXCEPTION:
    # a heartbeat's timeout is half the 3 s session) is the loaded machine's, not the controller's
    # (CI runs Spark beside this on 2 cores), and check_common holds that nobody was fenced for it
    answered_errors = {key: n for key, n in run.stats.errors_by_code.items() if not key.endswith(":NETWORK_EXCEPTION")}
    assert answered_errors == {}
    acked = run.kinds("partition_acked")
    assert len(acked) >= 2
    assert any(len(a.isr) < 3 for a in acked) and any(len(a.isr) == 3 for a in acked)  # shrinks and expansions
    assert run.stats.faults == {} and run.stats.stale_replays_sent == 0


async def test_rolling_restart_shuts_brokers_down_in_turn_and_they_come_back(root: Path) -> None:
    run = await scenario_run(root, "rolling-restart")
    check_common(run)
    shutdowns = run.kinds("shutdown")
    assert len(shutdowns) >= 2
    assert all(entry.finished_wall_ns is not None for entry in shutdowns[:-1])  # the last may be cut off
    ends = sorted((entry.started_wall_ns, entry.finished_wall_ns or 0) for entry in shutdowns)
    for (_, finished), (started, _) in itertools.pairwise(ends):
        assert finished <= started  # one broker at a time
    assert run.stats.requests_by_api["ControlledShutdown"] + run.stats.requests_by_api["BrokerHeartbeat"] > 0
    assert len(run.kinds("registered")) > 5  # new incarnations
    # No StopReplica is asserted here: the shutting-down broker's StopReplica is queued as it leaves
    # its ISRs, and dropped with the rest of its queue when it is fenced a moment later (SHUTDOWN_NOW),
    # so whether one lands is a race (two or three of four do; all four missed once in six runs).
    # The disk-failures scenario asserts StopReplica, to a broker that stays up.


async def test_disk_failures_take_replicas_offline_and_back_online(root: Path) -> None:
    run = await scenario_run(root, "disk-failures")
    check_common(run)
    assert run.stats.faults["disk-failure"] >= 2
    assert run.stats.requests_by_api["AlterReplicaState"] >= 2  # OFFLINE, then ONLINE
    assert run.stats.control_requests_by_api["StopReplica"] > 0
    # every request answered; a heartbeat given up after its 1.5 s timeout is the loaded 2-core CI's
    # (as in the steady scenario), check_common holding that nobody was fenced for it
    lost = [key for key in run.stats.errors_by_code if key.endswith("NETWORK_EXCEPTION")]
    assert [key for key in lost if not key.startswith("BrokerHeartbeat:")] == []


async def test_chaos_sends_stale_replays_and_every_one_is_rejected(root: Path) -> None:
    run = await scenario_run(root, "chaos")
    check_common(run)
    replays = run.kinds("stale_replay")
    assert replays, "no stale replay was sent"
    assert [replay for replay in replays if replay.accepted] == []
    answered = [replay for replay in replays if replay.errors]
    assert answered and run.stats.stale_replays_rejected == len(answered)
    assert run.stats.stale_replays_sent == len(replays)
    assert {"crash", "pause", "drop-connection", "disk-failure"} <= set(run.stats.faults)


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_the_checker_finds_no_violation_in_any_scenario(root: Path, scenario: str) -> None:
    run = await scenario_run(root, scenario)
    result = check(run.directory / "data", run.entries)
    assert result.ok, (result.violation_counts, result.problems, [v.to_json() for v in result.violations[:5]])


async def test_every_inbound_api_appears_across_the_scenarios(root: Path) -> None:
    seen: set[str] = set()
    for scenario in SCENARIOS:
        seen |= {name for name, count in (await scenario_run(root, scenario)).stats.requests_by_api.items() if count}
    # the quorum's RPCs go between controllers, not from brokers (tests/controller/server/test_quorum.py)
    quorum = {ApiKey.FETCH, ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH}
    quorum |= {ApiKey.DESCRIBE_QUORUM, ApiKey.FETCH_SNAPSHOT}
    # the ACL APIs (protocol.md's second table with the quorum's) are an operator's, which
    # the fleet does not play: tests/e2e/test_acls.py sends each to the daemon
    acls = {ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS}
    assert seen >= {api(key).name for key in INBOUND_API_KEYS - quorum - acls}
