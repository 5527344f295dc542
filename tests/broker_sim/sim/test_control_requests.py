"""The fleet's brokers hold the controller's control requests to semantics.md: a StopReplica or a
LeaderAndIsr names its destination's broker epoch at every version that carries one."""

from __future__ import annotations

import subprocess
import sys


def test_a_stop_replica_naming_no_broker_epoch_is_a_bad_message_of_the_controller() -> None:
    """Planted: StopReplica sent with broker epoch -1, which the brokers never refuse as stale (a
    bounced broker would accept a stop meant for its previous incarnation). Chaos seed 0 deletes
    its scratch topics within 20 s."""
    planted = "tests.broker_sim.sim.planted:stop_replica_without_broker_epoch"
    command = ["-m", "broker_sim", "sim", "--seeds", "1", "--scenario", "chaos", "--duration", "20"]
    done = subprocess.run([sys.executable, *command, "--patch", planted], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    bad = [line for line in done.stdout.splitlines() if line.startswith("  [bad-answer]")]
    assert bad and all("names no broker epoch (-1), not the destination's" in line for line in bad), done.stdout
