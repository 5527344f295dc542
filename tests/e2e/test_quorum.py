"""A controller quorum of three real daemons, started by hand with the documented flags
and spoken to with kio (an implementation independent of fencer's codec).

One module-wide quorum, in order: one leader named by DescribeQuorum (the others answer
NOT_LEADER_OR_FOLLOWER, broker and admin APIs NOT_CONTROLLER naming it); a topic created at the
leader; the leader SIGKILLed: a new leader of a later epoch within seconds, the topic still there;
the killed node restarted: it catches up and holds the same committed log. A paused leader
(SIGSTOP past the fetch timeout) is deposed, and wakes up answering NOT_CONTROLLER, never NONE.
A sole voter answers DescribeQuorum naming itself.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from broker_sim.shell.quorum import pick_ports
from controller.engine import ControllerEngine
from controller.slices import finish

from . import kio_messages as m
from .daemon_process import DaemonProcess
from .kio_client import KioClient

pytestmark = pytest.mark.xdist_group("quorum")
CLUSTER = "QuorumClusterAAAAAAAAA"
NOT_CONTROLLER, NOT_LEADER_OR_FOLLOWER = 41, 6


def describe_quorum(port: int, version: int = 2) -> Any:
    mod = m.module(55, version)
    partition = mod.PartitionData(partition_index=0)
    request = mod.DescribeQuorumRequest(
        topics=(mod.TopicData(topic_name="__cluster_metadata", partitions=(partition,)),)
    )
    with KioClient(port) as client:
        return client.request(request).topics[0].partitions[0]


class Quorum:
    def __init__(self, root: Path, size: int = 3, *extra: str) -> None:
        self.root = root
        self.extra = extra
        # below the ephemeral range, as the fleet's quorum picks them: a daemon of another test that
        # listens on port 0 (or any outgoing connection) cannot take a voter's port meanwhile
        ports = pick_ports(2 * size)  # one draw: a metrics port is never a voter's port too
        self.ports, self.metrics_ports = ports[:size], ports[size:]
        self.voters = ",".join(f"{i + 1}@127.0.0.1:{port}" for i, port in enumerate(self.ports))
        self.nodes: dict[int, DaemonProcess] = {}

    def start(self, node: int, module: str = "controller") -> DaemonProcess:
        process = DaemonProcess(
            self.root / f"node-{node}",
            "--listen", f"127.0.0.1:{self.ports[node - 1]}",
            "--node-id", str(node),
            "--controller-quorum-voters", self.voters,
            "--cluster-id", CLUSTER,
            "--controller-quorum-election-timeout-ms", "500",
            "--controller-quorum-fetch-timeout-ms", "1000",
            "--metrics-listen", f"127.0.0.1:{self.metrics_ports[node - 1]}",
            *(() if "--tls-cert" in self.extra else ("--allow-unauthenticated-voters",)),  # plaintext on loopback
            *self.extra,
            module=module,
        ).start()  # fmt: skip
        self.nodes[node] = process
        return process

    def port(self, node: int) -> int:
        return self.ports[node - 1]

    def leader(self, among: set[int] | None = None, timeout: float = 10.0) -> tuple[int, Any]:
        """(node, DescribeQuorum partition) of the node that answers as leader."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node in sorted(among or self.nodes):
                try:
                    answer = describe_quorum(self.port(node))
                except OSError:
                    continue
                if answer.error_code == 0:
                    return node, answer
            time.sleep(0.05)
        raise AssertionError("no leader")


QuorumT = TypeVar("QuorumT", bound=Quorum)


def http(port: int, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
        return str(response.read().decode())


def gauge(metrics: str, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", metrics, re.M)
    assert found, name
    return float(found[1])


def committed_topics(data_dir: Path, node: int) -> set[str]:
    """The topics of a stopped node's state: its newest snapshot, then its log replayed."""
    engine = ControllerEngine.load(data_dir, node_id=node, fsync=False)
    try:
        finish(engine.catch_up(engine.log.next_offset))
        return set(engine.core.state.replication.names)
    finally:
        engine.close()


@contextlib.contextmanager
def running(q: QuorumT) -> Iterator[QuorumT]:
    """Nodes 1 to 3 of `q` started; at the end, every node still running stopped (a paused one
    woken first)."""
    try:
        for node in (1, 2, 3):
            q.start(node)
        yield q
    finally:
        for process in q.nodes.values():
            if process.process is not None and process.process.poll() is None:
                process.process.send_signal(signal.SIGCONT)
                process.stop()


@contextlib.contextmanager
def paused(*processes: Any) -> Iterator[None]:
    """The processes stopped (SIGSTOP) for the block, woken (SIGCONT) however it ends."""
    for process in processes:
        assert process is not None
        process.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        for process in processes:
            process.send_signal(signal.SIGCONT)


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Quorum]:
    with running(Quorum(tmp_path_factory.mktemp("quorum"))) as q:
        yield q


def test_one_leader_the_others_redirect(quorum: Quorum) -> None:
    leader, answer = quorum.leader()
    deadline = time.monotonic() + 10
    while answer.high_watermark < 1 and time.monotonic() < deadline:  # -1 until its LeaderChange commits
        time.sleep(0.05)
        answer = describe_quorum(quorum.port(leader))
    assert answer.leader_id == leader and answer.leader_epoch >= 1 and answer.high_watermark >= 1
    assert sorted(voter.replica_id for voter in answer.current_voters) == [1, 2, 3]
    for node in {1, 2, 3} - {leader}:
        assert describe_quorum(quorum.port(node)).error_code == NOT_LEADER_OR_FOLLOWER
        with KioClient(quorum.port(node)) as client:
            deadline = time.monotonic() + 5  # a follower learns of the leader from its BeginQuorumEpoch
            while True:
                created = client.request(m.create_topics(7, "refused", 1, 1)).topics[0]
                assert created.error_code == NOT_CONTROLLER
                if created.error_message != "No controller appears to be active." or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert created.error_message == f"The active controller appears to be node {leader}"
            # the ACL APIs too (protocol.md's rule for a standby, whatever its authorizer)
            redirect = (NOT_CONTROLLER, f"The active controller appears to be node {leader}")
            described = client.request(m.describe_acls(3))
            assert (described.error_code, described.error_message) == redirect
            created_acls = client.request(m.create_acls(0, "x")).results
            assert [(r.error_code, r.error_message) for r in created_acls] == [redirect]
            deleted = client.request(m.delete_acls(3, "x", "y")).filter_results
            assert [(r.error_code, r.error_message) for r in deleted] == [redirect] * 2
            versions = client.request(m.api_versions(3))
            assert {52, 53, 54, 55, 59, 1} <= {k.api_key for k in versions.api_keys}
    # operators see who leads: /state's "quorum" and Kafka's raft-metrics, on every node
    for node in (1, 2, 3):
        metrics = http(quorum.metrics_ports[node - 1], "/metrics")
        assert gauge(metrics, "fencer_raft_current_leader") == leader
        assert gauge(metrics, "fencer_controller_active_controller_count") == (node == leader)
        assert gauge(metrics, 'fencer_raft_current_state{state="leader"}') == (node == leader)
        state = json.loads(http(quorum.metrics_ports[node - 1], "/state"))["quorum"]
        assert (state["leader_id"], state["epoch"], state["node_id"]) == (leader, answer.leader_epoch, node)
    leader_metrics = http(quorum.metrics_ports[leader - 1], "/metrics")
    assert re.search(r'^fencer_raft_follower_lag_records\{voter="\d"\} \d', leader_metrics, re.M)
    assert gauge(leader_metrics, "fencer_raft_election_latency_seconds_count") >= 1


def test_a_voter_of_another_cluster_and_another_partition_are_refused(quorum: Quorum) -> None:
    """A Vote from another cluster: INCONSISTENT_CLUSTER_ID (104) at the top level, nothing
    granted; a Vote about another partition: INVALID_REQUEST (42), as Kafka's KRaft answers. Neither
    moves the leader; a loaded machine may hold an election of its own meanwhile (timeouts of 500 and
    1000 ms here), so the pair is sent again (up to three times) until one try saw no election at all:
    a node that steps down on a refused Vote moves the leader on every try."""
    import importlib

    mod = importlib.import_module("kio.schema.vote.v1.request")

    def vote(leader: int, epoch: int, cluster: str, topic: str) -> Any:
        partition = mod.PartitionData(
            partition_index=0, candidate_epoch=epoch + 1, candidate_id=leader % 3 + 1,
            candidate_directory_id=uuid.UUID(int=0), voter_directory_id=uuid.UUID(int=0),
            last_offset_epoch=epoch, last_offset=10**6,
        )  # fmt: skip
        request = mod.VoteRequest(
            cluster_id=cluster, voter_id=leader, topics=(mod.TopicData(topic_name=topic, partitions=(partition,)),)
        )
        with KioClient(quorum.port(leader)) as client:
            return client.request(request)

    moves = []
    for _ in range(3):
        leader, before = quorum.leader()
        assert vote(leader, before.leader_epoch, "AnotherClusterAAAAAAAA", "__cluster_metadata").error_code == 104
        assert vote(leader, before.leader_epoch, CLUSTER, "orders").error_code == 42
        _, after = quorum.leader()
        if (after.leader_id, after.leader_epoch) == (leader, before.leader_epoch):
            break
        moves.append(((leader, before.leader_epoch), (after.leader_id, after.leader_epoch)))
    else:
        raise AssertionError(f"the leader moved on every try (leader, epoch) before -> after: {moves}")


def test_a_short_stall_of_the_leader_holds_answers_back_and_loses_nothing(quorum: Quorum) -> None:
    """A stall shorter than the followers' fetch timeout (no election) but longer than a quarter of
    it: the leader's lease lapses, the request that waited through the stall is answered once the
    followers' fetches restore it, and the next write goes on (a write refused while the node
    still led once left the engine's offsets ahead of the quorum's: the node stopped). A loaded
    machine may let the followers time out all the same (the stopped leader's fetch answers come
    late): then the leader is deposed, and its held request, whose commit the new leader may or
    may not make, is closed unanswered by design (never answered NONE); the stall is tried again,
    up to three times, until one try saw no election."""
    elections = []
    for _ in range(3):
        leader, before = quorum.leader()
        process = quorum.nodes[leader].process
        assert process is not None
        with KioClient(quorum.port(leader)) as held:
            with paused(process):
                correlation = held.send(m.broker_registration(1, 8, CLUSTER, uuid.uuid4(), 9998))
                time.sleep(0.4)  # > fetch timeout / 4 (a stall), < fetch timeout (nobody stands)
            try:
                waited = held.receive(m.broker_registration(1, 8, CLUSTER, uuid.uuid4(), 9998), correlation)
            except ConnectionError:
                waited = None
            after = quorum.leader()[1]
            if after.leader_epoch != before.leader_epoch:  # an election after all: try again
                elections.append((before.leader_epoch, after.leader_epoch, waited is None))
                continue
            assert waited is not None and waited.error_code == 0
            again = held.request(m.broker_registration(1, 9, CLUSTER, uuid.uuid4(), 9997))
            assert again.error_code == 0 and again.broker_epoch > waited.broker_epoch
        assert process.poll() is None
        assert quorum.leader()[1].leader_epoch == before.leader_epoch  # no election
        return
    raise AssertionError(f"an election on every try (epoch before, after, closed unanswered): {elections}")


def test_api_versions_never_waits_behind_a_commit(quorum: Quorum) -> None:
    """A voter's handshake (ApiVersions) is answered at once even while the leader waits for a
    majority that is not there (both followers paused): it depends on no commit."""
    leader, _ = quorum.leader()
    followers = [quorum.nodes[node].process for node in sorted({1, 2, 3} - {leader})]
    with KioClient(quorum.port(leader)) as waiting, KioClient(quorum.port(leader)) as other, paused(*followers):
        waiting.send(m.broker_registration(1, 10, CLUSTER, uuid.uuid4(), 9996))  # cannot commit now
        time.sleep(0.1)
        started = time.monotonic()
        versions = other.request(m.api_versions(3))
        assert versions.error_code == 0 and time.monotonic() - started < 0.5
    quorum.leader(timeout=10)  # whole again for the tests after this one


def test_a_sigkilled_leader_is_replaced_and_rejoins_with_the_committed_log(quorum: Quorum) -> None:
    leader, before = quorum.leader()
    with KioClient(quorum.port(leader)) as client:
        assert client.request(m.create_topics(7, "kept", 1, 1)).topics[0].error_code in (0, 38)  # 38: no brokers yet
        cluster = client.request(m.describe_cluster(1))
        assert str(cluster.cluster_id) == CLUSTER and cluster.controller_id == leader
        registration = client.request(m.broker_registration(1, 7, CLUSTER, uuid.uuid4(), 9999))
        assert registration.error_code == 0  # acknowledged: committed on a majority
        registered_epoch = registration.broker_epoch
    quorum.nodes[leader].kill()
    killed_at = time.monotonic()
    survivors = {1, 2, 3} - {leader}
    new_leader, after = quorum.leader(among=survivors)
    assert after.leader_epoch > before.leader_epoch
    with KioClient(quorum.port(new_leader)) as client:
        while (described := client.request(m.describe_cluster(1))).error_code == NOT_CONTROLLER:
            time.sleep(0.02)  # elected; active once its LeaderChange is committed
        failover_s = time.monotonic() - killed_at
        assert described.error_code == 0 and described.controller_id == new_leader
        assert failover_s < 8, failover_s
        heartbeat = m.broker_heartbeat(1, 7, registered_epoch, offset=0)
        assert client.request(heartbeat).error_code == 0  # the broker's session survived the failover
    quorum.start(leader)  # rejoins as a follower and catches up
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        _, answer = quorum.leader(among=survivors)
        ends = {voter.replica_id: voter.log_end_offset for voter in answer.current_voters}
        if ends[leader] >= answer.high_watermark > 0:
            break
        time.sleep(0.1)
    assert ends[leader] >= answer.high_watermark, (ends, answer.high_watermark)


def test_a_paused_leader_is_deposed_and_wakes_up_answering_not_controller(quorum: Quorum) -> None:
    leader, before = quorum.leader()
    process = quorum.nodes[leader].process
    assert process is not None
    with KioClient(quorum.port(leader)) as held:
        with paused(process):
            correlation = held.send(m.create_topics(7, "zombie", 1, 1))  # read by nobody until SIGCONT
            new_leader, after = quorum.leader(among={1, 2, 3} - {leader})
            assert after.leader_epoch > before.leader_epoch
        try:
            answer = held.receive(m.create_topics(7, "zombie", 1, 1), correlation)
        except (OSError, AssertionError, EOFError):
            answer = None  # closed unanswered: allowed
        if answer is not None:
            assert answer.topics[0].error_code == NOT_CONTROLLER, answer  # never NONE under the old epoch
    deadline = time.monotonic() + 10
    while describe_quorum(quorum.port(leader)).error_code != NOT_LEADER_OR_FOLLOWER:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    for node in (1, 2, 3):
        quorum.nodes[node].stop()
    assert "zombie" not in committed_topics(quorum.root / f"node-{new_leader}", new_leader)


def test_a_sole_voter_answers_describe_quorum_naming_itself(tmp_path: Path) -> None:
    process = DaemonProcess(tmp_path / "data", "--node-id", "4").start()
    try:
        answer = describe_quorum(process.port)
        assert (answer.error_code, answer.leader_id, answer.leader_epoch) == (0, 4, 1)
        assert [(v.replica_id, v.log_end_offset) for v in answer.current_voters] == [(4, answer.high_watermark)]
        assert answer.observers == ()
    finally:
        assert process.stop() == 0


def ends_of(quorum: Quorum) -> dict[int, int]:
    return {voter.replica_id: voter.log_end_offset for voter in quorum.leader()[1].current_voters}


def snapshots(data_dir: Path) -> list[str]:
    return sorted(path.name for path in (data_dir / "__cluster_metadata-0").glob("*.checkpoint"))


def test_a_follower_behind_the_leaders_retention_catches_up_from_its_snapshot(tmp_path: Path) -> None:
    """Every node snapshots its committed state (the followers too, so retention bounds every log);
    a follower that was down while the leader deleted what it lacks fetches the leader's snapshot
    (FetchSnapshot, in chunks), installs it, and follows on from it."""
    small = ("--snapshot-bytes", "8000", "--segment-bytes", "16384", "--metadata-retention-bytes", "40000")
    quorum = Quorum(tmp_path, 3, *small)
    for node in (1, 2, 3):
        quorum.start(node)
    try:
        leader, _ = quorum.leader()
        follower, other = sorted({1, 2, 3} - {leader})
        while min(voter.log_end_offset for voter in quorum.leader()[1].current_voters) < 1:
            time.sleep(0.05)  # both followers fetch: the leader keeps its majority without one of them
        with KioClient(quorum.port(leader)) as client:
            while client.request(m.describe_cluster(1)).error_code == NOT_CONTROLLER:
                time.sleep(0.02)
            epochs = {
                b: client.request(m.broker_registration(1, b, CLUSTER, uuid.uuid4(), 9000 + b)).broker_epoch
                for b in (1, 2, 3)
            }
            for broker, epoch in epochs.items():
                assert client.request(m.broker_heartbeat(1, broker, epoch)).error_code == 0
        follower_end = ends_of(quorum)[follower]
        quorum.nodes[follower].stop()
        created = 0
        with KioClient(quorum.port(leader)) as client:
            while created < 300:  # snapshots every ~84 records, 16 KiB segments deleted by retention
                for _ in range(20):
                    assert client.request(m.create_topics(7, f"t{created}", 20, 3)).topics[0].error_code == 0
                    created += 1
                segments = (tmp_path / f"node-{leader}" / "__cluster_metadata-0").glob("*.log")
                if min(int(segment.stem) for segment in segments) > follower_end:
                    break  # the leader no longer holds what the stopped follower lacks (read off its files)
        assert snapshots(tmp_path / f"node-{other}"), "a follower snapshots too"
        quorum.start(follower)
        deadline = time.monotonic() + 15
        while True:
            _, answer = quorum.leader()
            ends = {voter.replica_id: voter.log_end_offset for voter in answer.current_voters}
            if ends[follower] >= answer.high_watermark or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert ends[follower] >= answer.high_watermark, (ends, answer.high_watermark)
        assert "installed the leader's snapshot" in quorum.nodes[follower].stderr()
    finally:
        for process in quorum.nodes.values():
            process.stop()
    assert committed_topics(tmp_path / f"node-{follower}", follower) >= {f"t{index}" for index in range(created)}


def test_sigterm_while_a_follower_appends_waits_for_the_append_and_exits_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A follower stopped in the middle of an append (its fsync held 3 s by a slow disk) finishes
    the append before it closes its log: exit 0, never "the metadata log is closed" (exit 1), and
    the next start reads an intact log."""
    quorum = Quorum(tmp_path, 3)
    try:
        quorum.start(1)
        quorum.start(2)
        quorum.leader({1, 2})  # elected by the two: node 3 joins as a follower
        marker = tmp_path / "slow"
        marker.touch()
        monkeypatch.setenv("FENCER_SLOW_DISK", str(marker))  # node 3 alone is started with it
        monkeypatch.setenv("FENCER_SLOW_DISK_SECONDS", "3")
        follower = quorum.start(3, module="tests.e2e.slow_disk_daemon")
        segment = tmp_path / "node-3" / "__cluster_metadata-0" / "00000000000000000000.log"
        deadline = time.monotonic() + 20
        while not (segment.exists() and segment.stat().st_size > 0):  # written, its fsync held
            assert time.monotonic() < deadline, follower.stderr()
            time.sleep(0.02)
        assert follower.stop(signal.SIGTERM, timeout=30) == 0, follower.stderr()
        assert "CRITICAL" not in follower.stderr()
        marker.unlink()
        quorum.start(3)  # reads its log as it was left
    finally:
        for process in quorum.nodes.values():
            process.stop()
