"""The four set-ups the fuzzer runs against: real daemons started as subprocesses, real TCP.

- `single`: one node with no quorum flags and no authorizer, as the README's Quick start runs it
  (capture on).
- `tls`: one node whose listener requires client certificates (`--tls-cert/--tls-key/--tls-ca`)
  with `--authorizer standard`; the fuzzer mostly connects as `User:fuzzer`, a super user (so
  requests get past the authorizer), and sometimes as `User:intruder`, who may do nothing.
- `quorum-leader`, `quorum-follower`: the leader, or a follower, of three voters behind mTLS
  (as tests/e2e/test_tls_quorum.py starts them: one `controller` certificate shared by the
  voters, `--authorizer standard`, `--super-users 'User:controller;User:fuzzer'`, the CN rule).
  The fuzzer connects as `User:fuzzer`, never with a voter's certificate: a Raft request from it
  must not count as any voter's. No quorum here runs without TLS client authentication, so none
  needs `--allow-unauthenticated-voters`, whether or not the daemon has that flag.

Every deployment is prepared the same way, at the active controller, before the first frame: a
bystander broker (id 100) registered, unfenced and heartbeating from its own thread; the
fuzzer's brokers 11, 12 and 13 registered and unfenced; topics `fz-a` (3 partitions on 11-13)
and `fz-b` (1 partition on 11); with the authorizer, one ACL. Choices that keep the state from
moving by itself (so that a change after a refused request is that request's doing):
- `--session-timeout-ms 3600000`: the fuzzer's brokers never heartbeat again, and must not be
  fenced by expiry mid-run (a deployment lives minutes at most: `--restart-every` frames);
- the brokers' listeners point at a port nothing listens on (the control channel retries there
  in the background, which changes no state);
- `--snapshot-bytes 32768`: snapshots exist early, so FetchSnapshot reads real ones (a snapshot
  changes nothing an observation holds).
"""

from __future__ import annotations

import random
import shutil
import ssl
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.messages import broker_heartbeat as bh
from protocol.messages import broker_registration as br
from protocol.messages import create_acls as ca
from protocol.messages import create_topics as ct
from tests.e2e.daemon_process import ROOT, DaemonProcess, free_port
from tests.e2e.fencer_client import FencerClient
from tests.pki import Pki

from .client import Bystander
from .observe import read_state

SETUPS = ("single", "tls", "quorum-leader", "quorum-follower")
CN_RULE = "RULE:^CN=([^,]+),.*$/$1/,DEFAULT"
BYSTANDER_ID = 100
FUZZER_BROKERS = (11, 12, 13)
CAUGHT_UP = 1 << 40  # a metadata offset past any log end: the broker counts as caught up
COMMON_FLAGS = ("--session-timeout-ms", "3600000", "--snapshot-bytes", "32768")
QUORUM_FLAGS = ("--controller-quorum-election-timeout-ms", "1000", "--controller-quorum-fetch-timeout-ms", "2000")


@cache
def daemon_flags() -> str:
    """`python -m controller --help`, read once: which flags this tree's daemon has."""
    found = subprocess.run(
        [sys.executable, "-m", "controller", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    return found.stdout


class Certificates:
    """The CA and identities of the TLS set-ups, minted once per run of a set-up."""

    def __init__(self, directory: Path) -> None:
        self.pki = Pki(directory)
        self.controller = self.pki.issue("controller", "127.0.0.1")
        self.fuzzer = self.pki.issue("fuzzer")
        self.intruder = self.pki.issue("intruder")
        self.fuzzer_context = self.pki.client_context(self.fuzzer)
        self.intruder_context = self.pki.client_context(self.intruder)

    def daemon_flags(self) -> tuple[str, ...]:
        return (
            "--tls-cert", str(self.controller.cert), "--tls-key", str(self.controller.key),
            "--tls-ca", str(self.pki.ca), "--ssl-principal-mapping-rules", CN_RULE,
            "--authorizer", "standard", "--super-users", "User:controller;User:fuzzer",
        )  # fmt: skip


@dataclass
class Deployment:
    """One start of a set-up: its daemons, which node is fuzzed, and how to reach them."""

    setup: str
    root: Path
    nodes: dict[int, DaemonProcess]
    metrics_ports: dict[int, int]
    fuzzed: int
    leader: int
    tls: ssl.SSLContext | None  # the fuzzer's (a super user's) identity, None without TLS
    identities: list[tuple[str, ssl.SSLContext | None, float]]
    dead_port: int
    bystander: Bystander | None = None

    @property
    def target(self) -> DaemonProcess:
        return self.nodes[self.fuzzed]

    def stop(self) -> dict[int, int | None]:
        """Stop everything; each node's exit code (None: it had to be killed)."""
        if self.bystander is not None:
            self.bystander.stop()
        codes: dict[int, int | None] = {}
        for node, process in self.nodes.items():
            try:
                codes[node] = process.stop(timeout=15)
            except subprocess.TimeoutExpired:
                codes[node] = None
        return codes

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def start(setup: str, root: Path, certificates: Certificates | None, rng: random.Random) -> Deployment:
    """Start `setup`'s daemons under `root`, wait for an active controller, and prepare it (the
    brokers' incarnation ids drawn from `rng`)."""
    root.mkdir(parents=True, exist_ok=True)
    tls_flags = certificates.daemon_flags() if certificates is not None and setup != "single" else ()
    if setup in ("single", "tls"):
        metrics = {1: free_port()}
        extra = [*COMMON_FLAGS, *tls_flags, "--metrics-listen", f"127.0.0.1:{metrics[1]}"]
        if setup == "single":  # as the Quick start runs it
            extra += ["--capture-dir", str(root / "capture")]
        nodes = {1: DaemonProcess(root / "node-1", *extra).spawn()}
    else:
        ports = dict(zip((1, 2, 3), free_ports(3), strict=True))
        metrics = dict(zip((1, 2, 3), free_ports(3), strict=True))
        voters = ",".join(f"{node}@127.0.0.1:{port}" for node, port in ports.items())
        nodes = {
            node: DaemonProcess(
                root / f"node-{node}", *_voter_flags(node, ports[node], metrics[node], voters), *tls_flags
            )
            for node in (1, 2, 3)
        }
        for process in nodes.values():
            process.spawn()
    for process in nodes.values():
        process.wait_listening(30.0)
    leader = _active_controller(nodes, metrics)
    fuzzed = leader if setup != "quorum-follower" else min(node for node in nodes if node != leader)
    tls = certificates.fuzzer_context if tls_flags and certificates is not None else None
    identities: list[tuple[str, ssl.SSLContext | None, float]] = [
        ("User:fuzzer" if tls else "User:ANONYMOUS", tls, 1.0)
    ]
    if setup == "tls" and certificates is not None:
        identities = [("User:fuzzer", tls, 0.85), ("User:intruder", certificates.intruder_context, 0.15)]
    deployment = Deployment(setup, root, nodes, metrics, fuzzed, leader, tls, identities, free_port())
    try:
        _prepare(deployment, certificates, rng)
    except BaseException:
        deployment.stop()
        raise
    return deployment


def _voter_flags(node: int, port: int, metrics_port: int, voters: str) -> tuple[str, ...]:
    return (
        "--listen", f"127.0.0.1:{port}", "--node-id", str(node), "--controller-quorum-voters", voters,
        "--cluster-id", "FuzzQuorumAAAAAAAAAAAA", "--metrics-listen", f"127.0.0.1:{metrics_port}",
        *QUORUM_FLAGS, *COMMON_FLAGS,
    )  # fmt: skip


def free_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def _active_controller(nodes: dict[int, DaemonProcess], metrics: dict[int, int], timeout: float = 30.0) -> int:
    """The node that is the active controller, once every node names it as leader."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        views = {}
        for node in nodes:
            try:
                views[node] = read_state(metrics[node])["quorum"]
            except (OSError, ValueError, KeyError):
                break
        active = [node for node, view in views.items() if view["active_controller"]]
        if len(views) == len(nodes) and len(active) == 1 and all(v["leader_id"] == active[0] for v in views.values()):
            return active[0]
        time.sleep(0.05)
    raise RuntimeError("no active controller that every node knows")


def register(client: FencerClient, broker_id: int, cluster_id: str, port: int, incarnation: uuid.UUID) -> int:
    """Register and unfence a broker; its epoch."""
    listener = br.BrokerRegistrationRequestListener(name="PLAINTEXT", host="127.0.0.1", port=port)
    registration = br.BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=cluster_id, incarnation_id=incarnation, listeners=(listener,)
    )
    answer = client.request(registration, 3)
    if answer.error_code:
        raise RuntimeError(f"broker {broker_id} not registered: error {answer.error_code}")
    heartbeat = bh.BrokerHeartbeatRequest(
        broker_id=broker_id, broker_epoch=answer.broker_epoch, current_metadata_offset=CAUGHT_UP
    )
    if client.request(heartbeat, 1).error_code:
        raise RuntimeError(f"broker {broker_id} not unfenced")
    return int(answer.broker_epoch)


def _prepare(deployment: Deployment, certificates: Certificates | None, rng: random.Random) -> None:
    leader_port = deployment.nodes[deployment.leader].port
    cluster_id = read_state(deployment.metrics_ports[deployment.leader])["cluster_id"]
    # the preparation's requests at the active controller, over the fuzzer's identity
    client = FencerClient(leader_port, timeout=30, tls=deployment.tls)
    try:
        epoch = register(client, BYSTANDER_ID, cluster_id, deployment.dead_port, uuid.UUID(int=rng.getrandbits(128)))
        for broker in FUZZER_BROKERS:
            register(client, broker, cluster_id, deployment.dead_port, uuid.UUID(int=rng.getrandbits(128)))
        a, b, c = FUZZER_BROKERS
        for name, assignment in (("fz-a", ((a, b, c), (b, c, a), (c, a, b))), ("fz-b", ((a,),))):
            topic = ct.CreateTopicsRequestCreatableTopic(
                name=name, num_partitions=-1, replication_factor=-1,
                assignments=tuple(
                    ct.CreateTopicsRequestCreatableReplicaAssignment(partition_index=i, broker_ids=brokers)
                    for i, brokers in enumerate(assignment)
                ),
            )  # fmt: skip
            result = client.request(ct.CreateTopicsRequest(topics=(topic,)), 7).topics[0]
            if result.error_code:
                raise RuntimeError(f"topic {name} not created: error {result.error_code}")
        if certificates is not None and deployment.setup != "single":
            creation = ca.CreateAclsRequestAclCreation(
                resource_type=ResourceType.TOPIC, resource_name="fz-a", resource_pattern_type=PatternType.LITERAL,
                principal="User:fuzzed", host="*", operation=AclOperation.READ, permission_type=AclPermissionType.ALLOW,
            )  # fmt: skip
            if client.request(ca.CreateAclsRequest(creations=(creation,)), 3).results[0].error_code:
                raise RuntimeError("ACL not created")
    finally:
        client.close()
    deployment.bystander = Bystander(leader_port, deployment.tls, BYSTANDER_ID, epoch, CAUGHT_UP, seed=BYSTANDER_ID)
    deployment.bystander.start()


def describe(deployment: Deployment) -> str:
    nodes = ", ".join(f"node {node} on {process.port}" for node, process in deployment.nodes.items())
    return f"{deployment.setup}: {nodes}; fuzzed node {deployment.fuzzed}, leader {deployment.leader}"
