"""Every kind of request the fleet sends on purpose for the controller to refuse, named once.

Purpose: the rule map (`broker_sim.rule_map`) names, for each rule of semantics.md, the requests
of the fleet that provoke it; this is the list it may name from. Nothing here changes what the
fleet sends: it only names it.

Rules:
- A kind's name is `<journal kind>:<reason>` (`:<API>` where one reason covers several APIs): the
  journal entry that records the request and its answer (`broker_sim.journal`: `StaleReplay.kind`
  with its `reason` and `api`, `Probe.kind` with its `why`, `RequestProbe.kind` and
  `AdminProbe.kind` with their `probe`), so the name is what a journal says.
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
        "broker_sim.model.broker_replays:StaleReplaying._maybe_replay_deposed",
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
    # the request probes (broker_sim/model/probes.py; built by alter_partition_probes.py, lifecycle_probes.py
    # and replica_state_probes.py), journalled as request_probe with the kind
    "request_probe:follower": ProbeKind(
        "an AlterPartition from a follower on the leader and partition epochs its listener shows (row d): "
        "INVALID_REQUEST",
        "broker_sim.model.alter_partition_probes:_follower",
        "v.leader != known.broker_id",
    ),
    "request_probe:non-replica": ProbeKind(
        "the leader's ISR naming a broker that holds no replica of the partition (row f): INVALID_REQUEST",
        "broker_sim.model.alter_partition_probes:_isr_shape",
        "NON_REPLICA",
    ),
    "request_probe:duplicate": ProbeKind(
        "the leader's ISR naming a member twice (row f): INVALID_REQUEST",
        "broker_sim.model.alter_partition_probes:_isr_shape",
        "DUPLICATE",
    ),
    "request_probe:negative-id": ProbeKind(
        "the leader's ISR naming a negative broker id (row f): INVALID_REQUEST",
        "broker_sim.model.alter_partition_probes:_isr_shape",
        "NEGATIVE_ID",
    ),
    "request_probe:without-leader": ProbeKind(
        "the leader's ISR without the leader, or empty (row f): INVALID_REQUEST",
        "broker_sim.model.alter_partition_probes:_isr_shape",
        "without = tuple(",
    ),
    "request_probe:recovery-rollback": ProbeKind(
        "AlterPartition v1+ RECOVERING from RECOVERED (row g): INVALID_REQUEST",
        "broker_sim.model.alter_partition_probes:_recovery",
        "RECOVERY_ROLLBACK",
    ),
    "request_probe:recovering-isr": ProbeKind(
        "AlterPartition v1+ RECOVERING with more than one ISR member (row g): INVALID_REQUEST",
        "broker_sim.model.alter_partition_probes:_recovery",
        "RECOVERING_ISR",
    ),
    "request_probe:recovery-byte": ProbeKind(
        "AlterPartition v1+ with a LeaderRecoveryState byte other than 0 and 1: INVALID_REQUEST",
        "broker_sim.model.alter_partition_probes:_recovery",
        "RECOVERY_BYTES",
    ),
    "request_probe:unknown-topic": ProbeKind(
        "AlterPartition naming an unknown topic: UNKNOWN_TOPIC_ID (v2+, by id), "
        "UNKNOWN_TOPIC_OR_PARTITION (v0-1, by name)",
        "broker_sim.model.alter_partition_probes:_unknown_topic",
        "unknown_names(rng)",
    ),
    "request_probe:unknown-partition": ProbeKind(
        "AlterPartition naming an unknown partition index (row a): UNKNOWN_TOPIC_OR_PARTITION",
        "broker_sim.model.alter_partition_probes:_unknown_partition",
        "UNKNOWN_PARTITION +",
    ),
    "request_probe:partition-twice": ProbeKind(
        "AlterPartition naming one partition twice (one in three: 7 times): each later naming INVALID_REQUEST",
        "broker_sim.model.alter_partition_probes:_twice",
        "times=times",
    ),
    "request_probe:heartbeat-unregistered": ProbeKind(
        "a BrokerHeartbeat from an unregistered broker id: STALE_BROKER_EPOCH",
        "broker_sim.model.lifecycle_probes:_heartbeat",
        "unregistered_id(rng)",
    ),
    "request_probe:shutdown-unregistered": ProbeKind(
        "a ControlledShutdown from an unregistered broker id: BROKER_NOT_AVAILABLE",
        "broker_sim.model.lifecycle_probes:_shutdown",
        "unregistered_id(rng)",
    ),
    "request_probe:registration-cluster-id": ProbeKind(
        "a BrokerRegistration with another cluster id: INCONSISTENT_CLUSTER_ID",
        "broker_sim.model.lifecycle_probes:_registration",
        "REGISTRATION_CLUSTER_ID",
    ),
    "request_probe:registration-negative-id": ProbeKind(
        "a BrokerRegistration with a negative broker id: INVALID_REQUEST",
        "broker_sim.model.lifecycle_probes:_registration",
        "-1 - rng.randrange(4)",
    ),
    "request_probe:replica-state-unknown-state": ProbeKind(
        "an AlterReplicaState with a NewState other than 1 and 2: UNKNOWN_REPLICA_STATE",
        "broker_sim.model.replica_state_probes:_replica_state",
        "UNKNOWN_REPLICA_STATES",
    ),
    "request_probe:replica-state-unknown-topic": ProbeKind(
        "an AlterReplicaState OFFLINE for an unknown topic: UNKNOWN_TOPIC_ID (v1), UNKNOWN_TOPIC_OR_PARTITION (v0)",
        "broker_sim.model.replica_state_probes:_replica_state",
        "unknown_names(rng)",
    ),
    "request_probe:alter-partition-unregistered": ProbeKind(
        "an AlterPartition from an unregistered broker id: STALE_BROKER_EPOCH (top level)",
        "broker_sim.model.alter_partition_probes:_unregistered_alter",
        "unregistered_id(rng)",
    ),
    "request_probe:replica-state-unregistered": ProbeKind(
        "an AlterReplicaState from an unregistered broker id: STALE_BROKER_EPOCH (top level)",
        "broker_sim.model.replica_state_probes:_replica_state",
        "REPLICA_STATE_UNREGISTERED",
    ),
    "request_probe:replica-state-unknown-partition": ProbeKind(
        "an AlterReplicaState OFFLINE for an unknown partition index: UNKNOWN_TOPIC_OR_PARTITION",
        "broker_sim.model.replica_state_probes:_replica_state",
        "REPLICA_STATE_UNKNOWN_PARTITION",
    ),
    "request_probe:alter-partition-empty": ProbeKind(
        "an AlterPartition with no topic, from the broker's own or an unregistered id (top level 2): "
        "NONE and no topic in the answer",
        "broker_sim.model.alter_partition_probes:_empty",
        "requests.alter_partition(version, broker_id, broker_epoch, [])",
    ),
    "request_probe:alter-partition-newer-epoch": ProbeKind(
        "the leader's AlterPartition with a leader or partition epoch 1,000 and more above the committed "
        "ones (row b): that partition NOT_CONTROLLER, the top level NONE",
        "broker_sim.model.alter_partition_probes:_newer_epoch",
        "NEWER_EPOCH +",
    ),
    "request_probe:registration-duplicate": ProbeKind(
        "a BrokerRegistration of the broker's own id with a new incarnation id while its session is valid "
        "(unfenced, heard within a third of the session timeout): DUPLICATE_BROKER_REGISTRATION",
        "broker_sim.model.lifecycle_probes:_duplicate_registration",
        "FRESH_SESSION_FRACTION",
    ),
    "request_probe:replica-state-no-op": ProbeKind(
        "an AlterReplicaState of the state a hosted replica is already in (ONLINE never reported offline, "
        "OFFLINE reported and not repaired): NONE, nothing written",
        "broker_sim.model.replica_state_probes:_no_op_state",
        "known.replica_states.get(",
    ),
    # the admin probes (broker_sim/model/admin_probes.py), journalled as admin_probe with the kind
    "admin_probe:create-taken": ProbeKind(
        "a CreateTopics (v2-7) under a taken name: TOPIC_ALREADY_EXISTS",
        "broker_sim.model.admin_probes:_taken",
        "rng.choice(list(known.topics))",
    ),
    "admin_probe:create-replication-factor": ProbeKind(
        "a CreateTopics (v2-7) of replication factor 32,767, more than any cluster's brokers: "
        "INVALID_REPLICATION_FACTOR",
        "broker_sim.model.admin_probes:_replication_factor",
        "MAX_REPLICATION_FACTOR",
    ),
    "admin_probe:create-unregistered-replica": ProbeKind(
        "a CreateTopics (v2-7) assigning a replica to an unregistered or negative broker id: "
        "INVALID_REPLICA_ASSIGNMENT",
        "broker_sim.model.admin_probes:_assignment",
        "unregistered_id(rng)",
    ),
    "admin_probe:create-empty-replicas": ProbeKind(
        "a CreateTopics (v2-7) assigning a partition an empty replica list: INVALID_REPLICA_ASSIGNMENT",
        "broker_sim.model.admin_probes:_assignment",
        "replicas: tuple[int, ...] = ()",
    ),
    "admin_probe:create-bad-partition-indexes": ProbeKind(
        "a CreateTopics (v2-7) assigning partition indexes other than 0 to N-1 each once (repeated or with a "
        "gap): INVALID_REPLICA_ASSIGNMENT",
        "broker_sim.model.admin_probes:_malformed",
        "((0, 0), (1,), (0, 2))",
    ),
    "admin_probe:create-repeated-replica": ProbeKind(
        "a CreateTopics (v2-7) assigning a partition the same broker twice: INVALID_REPLICA_ASSIGNMENT",
        "broker_sim.model.admin_probes:_malformed",
        "(broker, broker)",
    ),
    "admin_probe:create-uneven-replicas": ProbeKind(
        "a CreateTopics (v2-7) assigning partition 1 fewer replicas than partition 0: INVALID_REPLICA_ASSIGNMENT",
        "broker_sim.model.admin_probes:_malformed",
        "pair[:1]",
    ),
    "admin_probe:delete-unknown": ProbeKind(
        "a DeleteTopics of an unknown topic: UNKNOWN_TOPIC_OR_PARTITION (by name, v1-6), UNKNOWN_TOPIC_ID (by id, v6)",
        "broker_sim.model.admin_probes:_delete_unknown",
        "unknown_name(rng)",
    ),
    "admin_probe:elect-unknown-topic": ProbeKind(
        "an ElectLeaders (v0-2) for an unknown topic: UNKNOWN_TOPIC_OR_PARTITION",
        "broker_sim.model.admin_probes:_elect_unknown",
        "unknown_name(rng)",
    ),
    "admin_probe:elect-unknown-partition": ProbeKind(
        "an ElectLeaders (v0-2) for a partition index past a topic's: UNKNOWN_TOPIC_OR_PARTITION",
        "broker_sim.model.admin_probes:_elect_unknown",
        "UNKNOWN_PARTITION +",
    ),
    "admin_probe:elect-unclean-led": ProbeKind(
        "an ElectLeaders UNCLEAN (v1-2) for a partition that has a leader: ELECTION_NOT_NEEDED",
        "broker_sim.model.admin_probes:_unclean",
        "known.led",
    ),
    "admin_probe:elect-unclean-leaderless": ProbeKind(
        "an ElectLeaders UNCLEAN (v1-2) for a partition the brokers last heard is leaderless: elected, "
        "ELIGIBLE_LEADERS_NOT_AVAILABLE, or ELECTION_NOT_NEEDED if led again",
        "broker_sim.model.admin_probes:_unclean",
        "known.leaderless",
    ),
}
