"""What the fleet's own quorum is to be (`QuorumPlan`: its nodes, their data dirs, the cluster id,
the timeouts, the controller module to run and its TLS), and the ports its nodes listen on
(`pick_ports`).

Rules:
- Ports: each node's port is chosen below the kernel's ephemeral range
  (`/proc/sys/net/ipv4/ip_local_port_range`), so that no port-0 listener (a broker's, a proxy's)
  and no outgoing connection can take a killed node's port before it restarts there.
"""

from __future__ import annotations

import random
import socket
from dataclasses import dataclass, field
from pathlib import Path

from broker_sim.model.quorum import QuorumTiming

from .tls import FleetTls

HOST = "127.0.0.1"
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_PORT = 10000


@dataclass(frozen=True)
class QuorumPlan:
    nodes: int
    data_dir: Path
    cluster_id: str
    session_timeout_ms: int
    timing: QuorumTiming = field(default_factory=QuorumTiming)
    module: str = "controller"
    extra_args: tuple[str, ...] = ()
    #: the fleet's --tls-*: each node serves TLS with the fleet's certificate, CA and all
    tls: FleetTls | None = None

    def node_dir(self, node: int) -> Path:
        return self.data_dir / f"node-{node}"

    @property
    def node_dirs(self) -> list[Path]:
        return [self.node_dir(node) for node in range(1, self.nodes + 1)]


def pick_ports(count: int) -> list[int]:
    """`count` free ports below the ephemeral range (see the module rules). Not a simulated choice:
    two runs on one machine must not draw the same ports, whatever their seeds."""
    try:
        lowest_ephemeral = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        lowest_ephemeral = 32768
    chooser = random.SystemRandom()
    ports: list[int] = []
    while len(ports) < count:
        port = chooser.randrange(LOWEST_PORT, max(LOWEST_PORT + 1000, lowest_ephemeral))
        with socket.socket() as probe:
            try:
                probe.bind((HOST, port))
            except OSError:
                continue
        if port not in ports:
            ports.append(port)
    return ports
