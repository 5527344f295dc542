"""Every kind of request the fleet sends on purpose for the controller to refuse, named once.

Purpose: the rule map (`broker_sim.rule_map`) names, for each rule of semantics.md, the requests
of the fleet that provoke it; this is the list it may name from. Nothing here changes what the
fleet sends: it only names it.

Rules:
- A kind's name is `<journal kind>:<reason>` (`:<API>` where one reason covers several APIs): the
  journal entry that records the request and its answer (`broker_sim.journal`: `StaleReplay.kind`
  with its `reason` and `api`, `Probe.kind` with its `why`), so the name is what a journal says.
- Each kind names its witness: the function of the fleet that builds it (`module:qualname`) and
  a literal its source holds (`tests/broker_sim/test_rule_map.py` imports the function and looks
  for the literal), so a kind the fleet stops sending fails that test rather than stay listed.
"""

from __future__ import annotations

from typing import NamedTuple


class ProbeKind(NamedTuple):
    what: str  # one line: the request and the answer a correct controller gives
    witness: str  # "module:qualname" of the fleet's code that builds it
    literal: str  # a literal that code's source holds


#: The fleet's probe kinds, by name (see the module rules).
PROBE_KINDS: dict[str, ProbeKind] = {
    "stale_replay:previous-incarnation:AlterPartition": ProbeKind(
        "an ISR change built by an earlier incarnation, sent by the next one: STALE_BROKER_EPOCH",
        "broker_sim.model.stale:previous_incarnation_plans",
        "alter_partition_plan(",
    ),
    "stale_replay:previous-incarnation:ControlledShutdown": ProbeKind(
        "a ControlledShutdown v2+ of an earlier incarnation, sent by the next one: STALE_BROKER_EPOCH",
        "broker_sim.model.stale:previous_incarnation_plans",
        "controlled_shutdown_plan(",
    ),
    "stale_replay:previous-incarnation:AlterReplicaState": ProbeKind(
        "an AlterReplicaState OFFLINE of an earlier incarnation, sent by the next one: STALE_BROKER_EPOCH",
        "broker_sim.model.stale:previous_incarnation_plans",
        "replica_state_plan(",
    ),
    "stale_replay:previous-incarnation:BrokerHeartbeat": ProbeKind(
        "a heartbeat of an earlier incarnation, sent by the next one: STALE_BROKER_EPOCH",
        "broker_sim.model.stale:previous_incarnation_plans",
        "heartbeat_plan(",
    ),
    "stale_replay:old-leader-epoch": ProbeKind(
        "a deposed leader's ISR change on its old leader epoch (KIP-497): FENCED_LEADER_EPOCH",
        "broker_sim.model.broker:BrokerModel._maybe_replay_deposed",
        "stale.OLD_LEADER_EPOCH",
    ),
    "stale_replay:old-partition-epoch": ProbeKind(
        "an applied ISR change re-sent with its old partition epoch: INVALID_UPDATE_VERSION",
        "broker_sim.model.broker:BrokerModel._alter_partition_answer",
        "stale.resent_plan(",
    ),
    "probe:fenced": ProbeKind(
        "a leader's ISR expansion naming a fenced follower (KIP-841): INELIGIBLE_REPLICA",
        "broker_sim.model.fleet_view:FleetView.ineligible",
        '"fenced"',
    ),
    "probe:shutting-down": ProbeKind(
        "a leader's ISR expansion naming a follower in controlled shutdown (KIP-841): INELIGIBLE_REPLICA",
        "broker_sim.model.fleet_view:FleetView.ineligible",
        '"shutting-down"',
    ),
    "probe:offline": ProbeKind(
        "a leader's ISR expansion naming a follower whose replica is offline: INELIGIBLE_REPLICA",
        "broker_sim.model.fleet_view:FleetView.ineligible",
        '"offline"',
    ),
    "probe:previous-epoch": ProbeKind(
        "an AlterPartition v3 naming a member with its previous incarnation's broker epoch (KIP-903): "
        "INELIGIBLE_REPLICA",
        "broker_sim.model.fleet_view:FleetView.ineligible",
        '"previous-epoch"',
    ),
}
