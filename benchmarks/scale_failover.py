"""Failover at scale: a 3-voter quorum holding a large image, its leader SIGKILLed while every
broker heartbeats (part of `make bench-scale`, `benchmarks/scale.py`).

Each voter starts from a copy of the image (its own node id; no quorum-state, so the three elect
a leader of a new epoch from the same log), as three `python -m controller` processes on their
real addresses, fsync on, Kafka's quorum timeouts (fetch 2,000 ms, election 1,000 ms). Once the
leader is active and has sent its full state, every broker of the image heartbeats every 500 ms,
each on its own connection, to whichever node leads (found by DescribeQuorum; NOT_CONTROLLER or a
closed connection sends it looking again). The leader is SIGKILLed; measured from the kill:
- until a node other than the killed one answers a heartbeat without error ("brokers served
  again"; Kafka's target counts from the fetch timeout's expiry, 2 s after the kill);
- the longest wait for a heartbeat's answer from the new leader, and how many it answered
  REQUEST_TIMED_OUT, while it activates (sessions restarted, the full LeaderAndIsr of every broker
  built) and for `--after` seconds more (heartbeats go on while the wiped voter catches up: the
  longest wait then is reported apart).
Then the killed voter comes back wiped (an empty data dir, formatted with the cluster id): the
seconds from its start until the leader's DescribeQuorum shows its log end at the high watermark
the leader had when it started (it fetches the leader's snapshot, then the tail), and until it
logs its state rebuilt from that snapshot (a hot standby again).
"""

from __future__ import annotations

import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.failover import describe
from broker_sim.shell.quorum import pick_ports
from protocol.error_codes import ErrorCode
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from tests.e2e.daemon_process import DaemonProcess
from tests.e2e.fencer_client import FencerClient

FETCH_TIMEOUT_MS = 2000  # Kafka's controller.quorum.fetch.timeout.ms
HEARTBEAT_S = 0.5
LOG_LEVEL = "warning"


@dataclass
class Failover:
    elected_s: float  # kill to a new leader answering DescribeQuorum
    served_s: float  # kill to the first heartbeat another node answered without error
    longest_s: float  # the longest heartbeat wait at the new leader
    timed_out: int  # heartbeats the new leader answered REQUEST_TIMED_OUT
    answered: int  # heartbeats the new leader answered
    caught_up_s: float  # the killed voter, wiped, started to its log end at the leader's high watermark
    rebuilt_s: float  # and to its state rebuilt from the snapshot it received
    catch_up_longest_s: float  # the longest heartbeat wait at the leader while the wiped voter caught up


@dataclass
class _Beats:
    """What the heartbeating brokers saw (shared by their threads)."""

    ports: list[int]
    dead: set[int] = field(default_factory=set)
    killed_at: float | None = None
    served_at: float | None = None
    catching_up: bool = False  # the wiped voter is back: waits count as `catch_up_longest`
    longest: float = 0.0
    catch_up_longest: float = 0.0
    timed_out: int = 0
    answered: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def leader(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for port in self.ports:
                if port not in self.dead and describe(port) is not None:
                    return port
            time.sleep(0.05)
        raise RuntimeError("no leader answered DescribeQuorum")

    def seen(self, port: int, sent: float, answered: float, error: int) -> None:
        with self.lock:
            if self.killed_at is None or sent < self.killed_at:
                return
            if error == ErrorCode.NOT_CONTROLLER:
                return  # a follower's refusal: the broker looks for the leader
            if error == ErrorCode.NONE and self.served_at is None:
                self.served_at = answered
            if self.catching_up:
                self.catch_up_longest = max(self.catch_up_longest, answered - sent)
                return
            self.longest = max(self.longest, answered - sent)
            self.answered += 1
            self.timed_out += error == ErrorCode.REQUEST_TIMED_OUT


def voters(image: Path, work: Path) -> tuple[list[DaemonProcess], list[int]]:
    """Three voters on copies of the image, spawned; their ports."""
    ports = pick_ports(3)
    quorum = ",".join(f"{node}@127.0.0.1:{port}" for node, port in enumerate(ports, start=1))
    nodes = []
    for node, port in enumerate(ports, start=1):
        data_dir = work / f"voter-{node}"
        shutil.copytree(image, data_dir)
        (data_dir / "__cluster_metadata-0" / "quorum-state").unlink(missing_ok=True)
        meta = data_dir / "meta.properties"
        lines = [f"node.id={node}" if line.startswith("node.id=") else line for line in meta.read_text().splitlines()]
        meta.write_text("\n".join(lines) + "\n")
        options = ["--listen", f"127.0.0.1:{port}", "--node-id", str(node), "--controller-quorum-voters", quorum]
        options += ["--controller-quorum-fetch-timeout-ms", str(FETCH_TIMEOUT_MS), "--log-level", LOG_LEVEL]
        options += ["--allow-unauthenticated-voters"]
        nodes.append(DaemonProcess(data_dir, *options).spawn())
    return nodes, ports


def failover(image: Path, work: Path, brokers: int, timeout: float, settle: float, after: float) -> Failover:
    nodes, ports = voters(image, work)
    beats = _Beats(ports)
    stop = threading.Event()
    try:
        for node in nodes:
            node.wait_listening(timeout)
        leader = beats.leader(timeout)
        time.sleep(settle)  # the leader's full state built
        threads = [threading.Thread(target=_beat, args=(beats, b, stop, timeout), daemon=True) for b in range(brokers)]
        for thread in threads:
            thread.start()
        time.sleep(4 * HEARTBEAT_S)
        victim = nodes[ports.index(leader)]
        beats.dead.add(leader)
        beats.killed_at = time.monotonic()
        victim.stop(signal.SIGKILL)
        new_leader = beats.leader(timeout)
        elected = time.monotonic() - beats.killed_at
        deadline = time.monotonic() + timeout
        while beats.served_at is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if beats.served_at is None:
            raise RuntimeError(f"no broker was served again within {timeout} s of the kill")
        time.sleep(after)
        assert new_leader != leader
        beats.catching_up = True
        caught_up, rebuilt = wiped_catch_up(victim, new_leader, image, timeout)
    finally:
        stop.set()
        for node in nodes:
            if node.process is not None and node.process.poll() is None:
                node.stop(timeout=60)
    served = beats.served_at - beats.killed_at
    return Failover(
        elected, served, beats.longest, beats.timed_out, beats.answered, caught_up, rebuilt, beats.catch_up_longest
    )


def wiped_catch_up(victim: DaemonProcess, leader_port: int, image: Path, timeout: float) -> tuple[float, float]:
    """The killed voter started again on an empty data dir: seconds until the leader sees its log
    end at the high watermark the leader had then, and until the voter logs its state rebuilt
    from the snapshot it received (a hot standby again)."""
    shutil.rmtree(victim.data_dir)
    meta = dict(line.split("=", 1) for line in (image / "meta.properties").read_text().splitlines() if "=" in line)
    node_id = int(victim.extra[victim.extra.index("--node-id") + 1])
    victim.extra += ["--cluster-id", meta["cluster.id"], "--log-level", "info"]  # its state's rebuild is logged
    victim.log_file.write_text("")
    view = describe(leader_port)
    assert view is not None
    began = time.monotonic()
    victim.spawn().wait_listening(timeout)
    caught_up = None
    while time.monotonic() - began < timeout:
        now = describe(leader_port)
        if caught_up is None and now is not None and now.committed_on(node_id) >= view.high_watermark:
            caught_up = time.monotonic() - began
        if caught_up is not None and "rebuilt its state from snapshot" in victim.stderr():
            return caught_up, time.monotonic() - began
        time.sleep(0.1)
    raise RuntimeError(f"the wiped voter {node_id} did not catch up and rebuild its state within {timeout} s")


def _beat(beats: _Beats, broker_id: int, stop: threading.Event, timeout: float) -> None:
    """One broker: a heartbeat every `HEARTBEAT_S` to the node that leads, on its own connection;
    sent again at once after REQUEST_TIMED_OUT; looks for the leader again when refused or cut off."""
    heartbeat = BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=broker_id, current_metadata_offset=0)
    while not stop.is_set():
        port = beats.leader(timeout)
        try:
            with FencerClient(port, timeout=timeout) as client:
                while not stop.is_set():
                    sent = time.monotonic()
                    answer = client.request(heartbeat, 1)
                    beats.seen(port, sent, time.monotonic(), answer.error_code)
                    if answer.error_code == ErrorCode.NOT_CONTROLLER:
                        break
                    if answer.error_code != ErrorCode.REQUEST_TIMED_OUT:
                        stop.wait(HEARTBEAT_S)
        except OSError:
            stop.wait(0.05)  # the leader is gone: find the next one
