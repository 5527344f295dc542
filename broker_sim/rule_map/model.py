"""What an entry of the rule map is, the sections the rules come from, and the probe and check names
several entries share.

A rule of `docs/semantics.md` is tied to its source by `quote`, a verbatim phrase of the sentence or
table row it stands for (tests/broker_sim/test_rule_map.py enumerates the spec's rules and fails for
one no entry quotes). A rule of the controller's own decisions (`DECISIONS`) is tied by its id: the
bullet of docs/controller/decisions.md that states it carries an anchor of that id, so the page's
wording is free and a link from the rule map's page lands on the decision.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    section: str
    statement: str  # the rule in one line
    probes: tuple[str, ...] = ()  # PROBE_KINDS names
    checks: tuple[str, ...] = ()  # violations.RULES names
    reach: str = ""  # why neither is possible
    unseen: str = ""  # what of the rule nothing sees yet
    quote: str = ""  # semantics.md's rules: a verbatim phrase of the sentence or row it stands for

    @property
    def gap(self) -> bool:
        return not (self.probes or self.checks or self.reach)


STALE_AP = "stale_replay:previous-incarnation:AlterPartition"
STALE_CS = "stale_replay:previous-incarnation:ControlledShutdown"
STALE_ARS = "stale_replay:previous-incarnation:AlterReplicaState"
STALE_HB = "stale_replay:previous-incarnation:BrokerHeartbeat"
STALE_ALL = (STALE_AP, STALE_CS, STALE_ARS, STALE_HB)
OLD_LEADER = "stale_replay:old-leader-epoch"
OLD_PARTITION = "stale_replay:old-partition-epoch"
INELIGIBLE = ("probe:fenced", "probe:shutting-down", "probe:offline", "probe:previous-epoch")
STALE_CHECKS = ("stale-replay-answer", "stale-replay-accepted")
PROBE_CHECKS = ("probe-answer", "probe-accepted")
ISR_SHAPE = (
    "request_probe:non-replica",
    "request_probe:duplicate",
    "request_probe:negative-id",
    "request_probe:without-leader",
)
UNREGISTERED = (
    "request_probe:heartbeat-unregistered",
    "request_probe:shutdown-unregistered",
    "request_probe:alter-partition-unregistered",
    "request_probe:replica-state-unregistered",
)
AUTHORIZED = (
    "the fleet's brokers are always authorised (its ACL run grants them CLUSTER_ACTION); refusals are "
    "tests/controller/ops/test_authorization.py's and tests/e2e/test_authorization.py's"
)
BOUND = (
    "the bound is the controller's --max-records-per-operation, which the fleet is not told (a higher one "
    "rightly accepts the request); {what} cover it"
)
BROKER_SIDE = (
    "the broker's own rule, which the fleet's listener enforces (broker_sim/shell/listener.py, its tests); "
    "what the controller sends is judged under Propagation"
)

STATE = "State and the log"
BROKERS = "Brokers"
ALTER_PARTITION = "AlterPartition (v0 = AlterIsr), checks in this order"
CONTROLLED_SHUTDOWN = "ControlledShutdown (key 7)"
ALTER_REPLICA_STATE = "AlterReplicaState (key 1000, KIP-589)"
PROPAGATION = "Propagation to brokers"
BROKER_SIDE_SECTION = "StopReplica and LeaderAndIsr (controller → broker; the broker simulator enforces this side)"
TOPICS = "CreateTopics, DeleteTopics, ElectLeaders"
DECISIONS = "What the controller decides (docs/controller/decisions.md)"
