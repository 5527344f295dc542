"""Each planted quorum bug of broken_daemon.py (`QUORUM_BUGS`) is real: a short script against three
voters shows it on the wire.

As test_broken_daemon.py does for a single controller: the same script runs against real voters
(the correct answer) and against voters with the bug (the bug's answer), so a patch that silently
stopped applying fails here. The voters are those of one `--controller-quorum-voters` list of
three, the quorum's timeouts 500/1000 ms; a script starts the ones it needs (two of three still
make a majority) and pauses (SIGSTOP) what it cuts off.
"""

from __future__ import annotations

import signal
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from broker_sim.model.quorum import VOTE_VERSION, describe_quorum_request, pre_vote_request, vote_answer
from protocol.error_codes import ErrorCode
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationRequestListener
from protocol.messages.describe_quorum import DescribeQuorumResponsePartitionData
from protocol.registry import encode_request
from tests.e2e.daemon_process import DaemonProcess, free_port
from tests.e2e.fencer_client import FencerClient
from tests.e2e.listener_thread import ListenerThread

from .broken_daemon import QUORUM_BUGS

CLUSTER = "QuorumBugsClusterAAAAA"
FETCH_TIMEOUT_MS = 1000


class Voters:
    """Three voters (real, or all with one bug); `start` any of them."""

    def __init__(self, root: Path, bug: str | None) -> None:
        self.root = root
        self.bug = bug
        self.ports = {node: free_port() for node in (1, 2, 3)}
        self.voters = ",".join(f"{node}@127.0.0.1:{port}" for node, port in self.ports.items())
        self.nodes: dict[int, DaemonProcess] = {}
        self.fetch_timeout_ms = FETCH_TIMEOUT_MS

    def start(self, *nodes: int) -> None:
        """Start `nodes` at once; return when each listens."""
        for node in nodes:
            options = [
                "--listen", f"127.0.0.1:{self.ports[node]}",
                "--node-id", str(node),
                "--controller-quorum-voters", self.voters,
                "--cluster-id", CLUSTER,
                "--controller-quorum-election-timeout-ms", "500",
                "--controller-quorum-fetch-timeout-ms", str(self.fetch_timeout_ms),
                "--allow-unauthenticated-voters",  # plaintext on loopback
            ]  # fmt: skip
            if self.bug is None:
                process = DaemonProcess(self.root / f"node-{node}", *options)
            else:
                module = "tests.broker_sim.broken_daemon"
                process = DaemonProcess(self.root / f"node-{node}", "--bug", self.bug, *options, module=module)
            self.nodes[node] = process.spawn()
        for node in nodes:
            self.nodes[node].wait_listening()

    def signal(self, node: int, signum: int) -> None:
        process = self.nodes[node].process
        assert process is not None
        process.send_signal(signum)

    def describe(self, node: int) -> DescribeQuorumResponsePartitionData:
        with FencerClient(self.ports[node], timeout=2.0) as client:
            return client.request(describe_quorum_request(), 1).topics[0].partitions[0]

    def leader(self, among: tuple[int, ...], newer_than: int = 0, timeout: float = 10.0) -> tuple[int, int]:
        """(node, epoch) of the node of `among` that answers DescribeQuorum as the leader of an epoch
        above `newer_than`, with its epoch's LeaderChange committed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node in among:
                try:
                    answer = self.describe(node)
                except OSError:
                    continue
                if answer.error_code == 0 and answer.leader_epoch > newer_than and answer.high_watermark >= 1:
                    return node, answer.leader_epoch
            time.sleep(0.05)
        raise AssertionError(f"no leader among {among}")

    def request(self, node: int, body: Any, version: int, timeout: float = 10.0) -> Any:
        """The answer, or None when the node closed the connection or said nothing in time."""
        try:
            with FencerClient(self.ports[node], timeout=timeout) as client:
                return client.request(body, version)
        except (OSError, ConnectionError, EOFError):
            return None

    def register(self, node: int, broker: int, port: int = 1, timeout: float = 10.0) -> Any:
        listener = BrokerRegistrationRequestListener(name="PLAINTEXT", host="127.0.0.1", port=port, security_protocol=0)
        request = BrokerRegistrationRequest(
            broker_id=broker, cluster_id=CLUSTER, incarnation_id=uuid.uuid4(), listeners=(listener,)
        )
        return self.request(node, request, 3, timeout)

    def stop(self) -> None:
        for process in self.nodes.values():
            if process.process is not None and process.process.poll() is None:
                process.process.send_signal(signal.SIGCONT)
                process.stop()


def heartbeat(broker: int, epoch: int) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(broker_id=broker, broker_epoch=epoch, current_metadata_offset=1 << 40)


def other(of: int, among: tuple[int, ...]) -> int:
    return next(node for node in among if node != of)


# ---------------------------------------------------------------------- the scripts
def answer_before_commit(voters: Voters) -> object:
    """A registration at a leader whose only follower is paused: committed nowhere else."""
    voters.fetch_timeout_ms = 2000  # the lease a broken leader answers within, on a loaded machine too
    voters.start(1, 2)
    leader, _ = voters.leader((1, 2))
    voters.signal(other(leader, (1, 2)), signal.SIGSTOP)
    answer = voters.register(leader, 0, timeout=8.0)  # the real one resigns after 3 s: the connection closes
    return None if answer is None else answer.error_code


def vote_for_shorter_log(voters: Voters) -> object:
    """A pre-vote for an empty log, asked of a follower whose leader is paused (it stands, so it
    grants pre-votes to candidates at least as up to date as itself)."""
    voters.start(1, 2)
    leader, _ = voters.leader((1, 2))
    follower = other(leader, (1, 2))
    voters.signal(leader, signal.SIGSTOP)
    time.sleep(1.5 * FETCH_TIMEOUT_MS / 1000)
    epoch, granted = 0, False
    for _ in range(20):  # its epoch first (a FENCED_LEADER_EPOCH answer names it), then the pre-vote in it
        answer = voters.request(follower, pre_vote_request(CLUSTER, follower, 3, epoch), VOTE_VERSION, 2.0)
        error, named, granted = vote_answer(answer)
        if error == ErrorCode.NONE:
            return granted
        epoch = max(epoch, named)
        time.sleep(0.1)
    raise AssertionError("no pre-vote was judged")


def keep_divergent_tail(voters: Voters) -> object:
    """A leader appends a registration its paused followers never get, is paused in turn while they
    elect another; woken, it follows the new leader: does it ever catch up with it?"""
    voters.fetch_timeout_ms = 2000  # a lease long enough for the steps below on a loaded machine
    voters.start(1, 2, 3)
    leader, epoch = voters.leader((1, 2, 3))
    followers = tuple(node for node in (1, 2, 3) if node != leader)
    for follower in followers:
        voters.signal(follower, signal.SIGSTOP)
    time.sleep(0.6)  # their held fetches answered (empty, past the 500 ms wait): no record reaches them now
    with socket.create_connection(("127.0.0.1", voters.ports[leader])) as held:  # never answered: no majority
        listener = BrokerRegistrationRequestListener(name="PLAINTEXT", host="127.0.0.1", port=1, security_protocol=0)
        request = BrokerRegistrationRequest(
            broker_id=0, cluster_id=CLUSTER, incarnation_id=uuid.uuid4(), listeners=(listener,)
        )
        held.sendall(encode_request(request, 3, 1, client_id="fencer-test"))
        time.sleep(0.3)  # decided and appended within the lease: a divergent tail
        voters.signal(leader, signal.SIGSTOP)
    for follower in followers:
        voters.signal(follower, signal.SIGCONT)
    successor, _ = voters.leader(followers, newer_than=epoch)
    voters.signal(leader, signal.SIGCONT)
    deadline = time.monotonic() + 2 * voters.fetch_timeout_ms / 1000
    while time.monotonic() < deadline:
        answer = voters.describe(successor)
        ends = {voter.replica_id: voter.log_end_offset for voter in answer.current_voters}
        if ends[leader] == ends[successor]:
            return True
        time.sleep(0.1)
    return False


def leader_never_resigns(voters: Voters) -> object:
    """A leader whose only follower is paused, past check-quorum (1.5 fetch timeouts): does it still lead?"""
    voters.start(1, 2)
    leader, _ = voters.leader((1, 2))
    voters.signal(other(leader, (1, 2)), signal.SIGSTOP)
    time.sleep(2.5 * FETCH_TIMEOUT_MS / 1000)
    return voters.describe(leader).error_code


def old_controller_epoch(voters: Voters) -> object:
    """A broker's listener, after the leader it registered with was paused and another elected:
    the controller epoch of the new leader's FULL LeaderAndIsr, against that leader's epoch."""
    voters.start(1, 2, 3)
    leader, epoch = voters.leader((1, 2, 3))
    live = ListenerThread(0)
    try:
        registered = voters.register(leader, 0, port=live.port)
        live.epoch = registered.broker_epoch
        assert voters.request(leader, heartbeat(0, live.epoch), 1).error_code == 0
        deadline = time.monotonic() + 5
        while live.listener.controller_epoch != epoch and time.monotonic() < deadline:
            time.sleep(0.05)
        assert live.listener.controller_epoch == epoch  # the first leader's FULL LeaderAndIsr
        received = len(live.received(4))
        voters.signal(leader, signal.SIGSTOP)
        followers = tuple(node for node in (1, 2, 3) if node != leader)
        _, new_epoch = voters.leader(followers, newer_than=epoch)
        deadline = time.monotonic() + 5
        while len(live.received(4)) == received and time.monotonic() < deadline:
            time.sleep(0.05)
        (request, _), *_ = live.received(4)[received:]
        return request.controller_epoch == new_epoch  # type: ignore[attr-defined]
    finally:
        live.stop()


def follower_answers(voters: Voters) -> object:
    """A heartbeat of a broker registered at the leader, sent to the follower once it knows the broker."""
    voters.start(1, 2)
    leader, _ = voters.leader((1, 2))
    epoch = voters.register(leader, 0).broker_epoch
    follower = other(leader, (1, 2))
    deadline = time.monotonic() + 5
    while True:
        answer = voters.request(follower, heartbeat(0, epoch), 1)
        if answer.error_code != ErrorCode.STALE_BROKER_EPOCH or time.monotonic() > deadline:
            return answer.error_code  # STALE_BROKER_EPOCH: a broken follower not yet caught up
        time.sleep(0.05)


# bug -> (script, what the real voters show, what the broken ones show)
CASES: dict[str, tuple[Callable[[Voters], object], object, object]] = {
    "answer-before-commit": (answer_before_commit, None, 0),
    "vote-for-shorter-log": (vote_for_shorter_log, False, True),
    "keep-divergent-tail": (keep_divergent_tail, True, False),
    "leader-never-resigns": (leader_never_resigns, ErrorCode.NOT_LEADER_OR_FOLLOWER, 0),
    "old-controller-epoch": (old_controller_epoch, True, False),
    "follower-answers": (follower_answers, ErrorCode.NOT_CONTROLLER, 0),
}


def test_every_quorum_bug_has_a_case() -> None:
    assert set(CASES) == set(QUORUM_BUGS)


@pytest.fixture
def voters(tmp_path: Path) -> Iterator[Callable[[str | None], Voters]]:
    started: list[Voters] = []

    def make(bug: str | None) -> Voters:
        (tmp_path / (bug or "real")).mkdir()
        made = Voters(tmp_path / (bug or "real"), bug)
        started.append(made)
        return made

    yield make
    for made in started:
        made.stop()


@pytest.mark.parametrize("bug", sorted(CASES))
def test_the_bug_shows_where_the_real_voters_are_right(bug: str, voters: Callable[[str | None], Voters]) -> None:
    script, right, wrong = CASES[bug]
    assert script(voters(None)) == right
    assert script(voters(bug)) == wrong
