"""Every interval and bound of a simulated broker, derived from the heartbeat interval and the
controller's session timeout (both in the fleet's configuration).

Rules: all values are seconds (floats). The leader checks its followers every `tick_s` (2 s in
large clusters) and
shrinks the ISR of a follower that has not been caught up for `lag_max_s` (Kafka's
replica.lag.time.max.ms, scaled down so that short runs see churn). A controlled shutdown is
retried every `shutdown_retry_s` and must finish within `shutdown_bound_s` (the bound stated in
the README and given to the checker): two session timeouts plus two heartbeat intervals, enough
for the first ControlledShutdown or WantShutDown heartbeat to move every leadership and the
answer to come back under load; a broker that is still not done by then gives up (a hard stop,
as Kafka's broker did after controlled.shutdown.max.retries).
"""

from __future__ import annotations

from dataclasses import dataclass

from broker_sim.journal.lifecycle import silence_slack_s

#: from this many replicas on, leaders check their followers every 2 s instead of every second:
#: with a thousand brokers these checks were the fleet's largest share of CPU after the sockets
LARGE_CLUSTER_REPLICAS = 10_000


@dataclass(frozen=True, slots=True)
class Timing:
    heartbeat_s: float
    session_timeout_s: float
    tick_s: float = 1.0
    lag_max_s: float = 2.0
    catch_up_s: float = 1.0  # a restarted or repaired replica lags this long before it is caught up
    warmup_s: float = 3.0  # no lag episodes before this (registration and topic creation settle)
    fenced_heartbeat_s: float = 0.25  # heartbeats while fenced or shutting down (Kafka: immediately)
    shutdown_retry_s: float = 0.5
    backoff_s: float = 0.25
    backoff_max_s: float = 4.0
    lai_wait_s: float = 30.0  # give up waiting for a newer LeaderAndIsr after this (a lost update)

    @property
    def shutdown_bound_s(self) -> float:
        return 2 * self.session_timeout_s + 2 * self.heartbeat_s

    @property
    def silence_slack_s(self) -> float:
        """How long past its session a silent broker may stay unfenced (the checker's
        `silent-broker-unfenced`; the formula is the journal's, `broker_sim.journal.lifecycle`, and
        the fleet records the value in its run's entry). Pauses outlast the session by more than
        this, so that the rule can judge them."""
        return silence_slack_s(self.heartbeat_s, self.session_timeout_s)

    @property
    def heartbeat_timeout_s(self) -> float:
        """A heartbeat unanswered for this long is given up and the connection reopened."""
        return max(1.0, self.session_timeout_s / 2)

    @property
    def request_timeout_s(self) -> float:
        return max(5.0, self.session_timeout_s)

    def backoff(self, failures: int) -> float:
        """Exponential backoff after `failures` consecutive failures (1 -> backoff_s)."""
        return float(min(self.backoff_max_s, self.backoff_s * 2 ** max(0, failures - 1)))


def timing_for(heartbeat_ms: int, session_timeout_ms: int, replicas: int = 0) -> Timing:
    """`replicas`: the cluster's partitions times the replication factor (a larger cluster takes
    longer to register and create its topics, so its faults and lag start later)."""
    heartbeat_s = heartbeat_ms / 1000
    return Timing(
        tick_s=1.0 if replicas < LARGE_CLUSTER_REPLICAS else 2.0,
        heartbeat_s=heartbeat_s,
        session_timeout_s=session_timeout_ms / 1000,
        fenced_heartbeat_s=min(heartbeat_s, 0.25),
        warmup_s=3.0 + heartbeat_s + replicas / 2000,
        lai_wait_s=max(30.0, 3 * session_timeout_ms / 1000),
    )
