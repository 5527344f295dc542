"""The controller's own decisions (docs/controller/decisions.md), where semantics.md is silent: each
entry's id is the anchor of the bullet that states it."""

from __future__ import annotations

from .model import AUTHORIZED, BOUND, DECISIONS, PROBE_CHECKS, STALE_ALL, STALE_CHECKS, UNREGISTERED, Rule

RULES: tuple[Rule, ...] = (
    Rule(
        "decides.quorum-rpcs",
        DECISIONS,
        "a quorum RPC that cannot be accepted is refused with Kafka's code, changing nothing; no peer stops a node",
        reach="the fleet's brokers send no Raft RPC: tests/raft/test_input_machine.py (any request, any state) and "
        "the daemon-level fuzzer (tests/fuzz/fuzz_daemon.py, make fuzz-daemon) hold it",
    ),
    Rule(
        "decides.authorization",
        DECISIONS,
        "Kafka's StandardAuthorizer where Kafka 3.9's ControllerApis checks, and where fencer differs",
        reach=AUTHORIZED,
    ),
    Rule(
        "decides.controlled-shutdown",
        DECISIONS,
        "the ZooKeeper-era rule; RF 1 neither moves nor remains; nothing to hand over: fenced at once",
        checks=("shutdown-bound", "shutdown-release", "shutdown-keeps-sole-leader"),
        unseen="the fencing at once",
    ),
    Rule(
        "decides.bounced-broker",
        DECISIONS,
        "a bounced broker keeps its ISR places until fenced; its old incarnation's requests: STALE_BROKER_EPOCH",
        probes=STALE_ALL,
        checks=(*STALE_CHECKS, "fenced-leader"),
    ),
    Rule(
        "decides.partition-twice",
        DECISIONS,
        "a partition named twice in one request: INVALID_REQUEST the second time",
        probes=("request_probe:partition-twice",),
        checks=PROBE_CHECKS,
        unseen="in AlterReplicaState and ElectLeaders",
    ),
    Rule(
        "decides.online-elects",
        DECISIONS,
        "ONLINE on a leaderless partition whose ISR holds the replica elects it",
        checks=("online-elects",),
    ),
    Rule(
        "decides.kept-records",
        DECISIONS,
        "configs, features, ACLs, quotas, SCRAM, tokens, producer ids... kept and replayed as Kafka does",
        reach="the fleet writes none of them; replay is tests/controller/state's and tests/kafka_dirs'",
    ),
    Rule(
        "decides.metadata-transactions",
        DECISIONS,
        "metadata transactions read as Kafka reads them; one left open is aborted at the next start",
        checks=("transaction-framing", "snapshot-state"),
    ),
    Rule(
        "decides.own-transactions",
        DECISIONS,
        "an operation of several batches is a transaction; its control orders wait for its End",
        checks=("transaction-framing", "observed-state"),
    ),
    Rule(
        "decides.offset-gap",
        DECISIONS,
        "a log that skips offsets is refused (and a problem to the checker)",
        reach="the fleet cannot make a controller skip an offset; the checker reports one as a problem, not a rule",
    ),
    Rule(
        "decides.bootstrap-checkpoint",
        DECISIONS,
        "bootstrap.checkpoint records go after the first LeaderChange, in a transaction",
        reach="the fleet formats its controllers without one (tests/controller, tests/kafka_dirs)",
    ),
    Rule(
        "decides.no-noop",
        DECISIONS,
        "no NoOp records; Kafka's are read and ignored",
        reach="a NoOp changes no state the fleet or the checker can judge",
    ),
    Rule(
        "decides.full-type",
        DECISIONS,
        "a full LeaderAndIsr has Type 2",
        checks=("full-state-delivery",),
    ),
    Rule(
        "decides.create-topics-bound",
        DECISIONS,
        "CreateTopics over --max-records-per-operation: POLICY_VIOLATION for every topic, nothing written",
        reach=BOUND.format(what="tests/controller/ops/test_topics_bounds.py and tests/e2e/test_bounds.py"),
    ),
    Rule(
        "decides.delete-topics-bound",
        DECISIONS,
        "DeleteTopics over the bound: POLICY_VIOLATION for every topic, nothing written",
        reach=BOUND.format(what="tests/controller/ops/test_topics_bounds.py"),
    ),
    Rule(
        "decides.metadata-topic",
        DECISIONS,
        "CreateTopics of __cluster_metadata: INVALID_REQUEST, nothing written",
        reach="the fleet never names the metadata topic: tests/controller/ops/test_topics.py",
    ),
    Rule(
        "decides.create-acls-any",
        DECISIONS,
        "CreateAcls naming ANY or MATCH: UNKNOWN_SERVER_ERROR for every creation, nothing written",
        reach="the fleet sends no ACL requests: tests/controller/ops/test_acls_authorized.py",
    ),
    Rule(
        "decides.acl-filters-indexed",
        DECISIONS,
        "ACL filters matched through the indexes; DeleteAcls decided a filter per step",
        reach="a cost, not an answer: tests/controller/ops/test_acls_authorized.py counts what is tried",
    ),
    Rule(
        "decides.elect-leaders-bound",
        DECISIONS,
        "ElectLeaders over the bound: POLICY_VIOLATION, nothing evaluated",
        reach=BOUND.format(what="tests/controller/ops/test_elections.py"),
    ),
    Rule(
        "decides.negative-ids",
        DECISIONS,
        "a negative broker id: refused to register, unknown to every request, INVALID_REQUEST in an ISR",
        probes=(
            "request_probe:registration-negative-id",
            "request_probe:negative-id",
            *UNREGISTERED,
            "admin_probe:create-unregistered-replica",
        ),
        checks=(*PROBE_CHECKS, "broker-registration"),
    ),
    Rule(
        "decides.many-partitions",
        DECISIONS,
        "broker-driven operations decided 2,000 partitions a step, never refused for size",
        checks=("fenced-leader", "transaction-framing"),
    ),
    Rule(
        "decides.heartbeat-deadline",
        DECISIONS,
        "a heartbeat not decided within its deadline is answered REQUEST_TIMED_OUT, its session kept",
        reach="a fleet run never holds the writer for a second; tests/controller/server/test_writer.py holds it "
        "with long work, and make bench-scale counts the timed-out heartbeats of a controlled shutdown",
    ),
    Rule(
        "decides.event-loop",
        DECISIONS,
        "CPU work in slices of about 5 ms",
        checks=("live-broker-fenced",),
    ),
    Rule(
        "decides.snapshots",
        DECISIONS,
        "snapshots delete nothing; retention as Kafka's; a failed snapshot is retried",
        checks=("snapshot-state",),
        unseen="retention and failed snapshots",
    ),
    Rule(
        "decides.connections",
        DECISIONS,
        "--max-connections, descriptors and --max-queued-bytes",
        reach="the fleet opens a few connections per broker, never past the limits; tests/controller/server's",
    ),
    Rule(
        "decides.control-requests",
        DECISIONS,
        "control requests to the first listener, pipelined, queues merged; a fenced broker's queue dropped",
        checks=("control-delivery", "observed-state", "full-state-delivery"),
    ),
)
