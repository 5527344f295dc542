"""Mixed load on the real daemon over several connections, recorded in `model.ClientModel`s.

Used by kill9.py (SIGKILL at chosen moments) and fsync_order.py (the daemon under strace).

Three data brokers (1, 2, 3) are registered and unfenced once; every topic has all three as
replicas, leader first. Each client is a thread with its own connection and seeded rng, its
own topics (`c<client>-t<n>`) and its own registering broker (100 + client), and sends one
request at a time, drawn by weight: AlterPartition (shrink the ISR to two, expand it back to
three), BrokerHeartbeat of a data broker, CreateTopics (1 to `max_partitions` partitions),
DeleteTopics (by id), BrokerRegistration of a new incarnation of its broker (which never
heartbeats, so stays fenced, so a new incarnation is always accepted). No client's request can
fail because of another's.

Rules:
- An error code in any answer, a timeout or a broken connection fails the run: every client
  stops and `halt` raises `LoadFailure` naming each failure and the request it hit. The one
  exception is a connection that breaks after `killing()` (which the caller calls before it
  sends SIGKILL, so a break the kill causes is always seen after it).
- `trigger(kind)` returns an event set when a client is about to send a request of that kind
  (the request is then in flight), so a caller can kill the daemon during one.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections import Counter
from dataclasses import replace
from typing import Any

from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
)
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationRequestListener
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
)
from protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicsRequestDeleteTopicState
from protocol.messages.describe_cluster import DescribeClusterRequest
from tests.e2e.fencer_client import FencerClient

from .model import DATA_BROKERS, ClientModel, InFlight, PartitionModel, Reconciled, TopicModel, reconcile

KINDS = ("alter", "heartbeat", "create", "delete", "register")
API_NAMES = {
    "alter": "AlterPartition",
    "heartbeat": "BrokerHeartbeat",
    "create": "CreateTopics",
    "delete": "DeleteTopics",
    "register": "BrokerRegistration",
}
DEFAULT_WEIGHTS = {"alter": 60, "heartbeat": 15, "create": 10, "delete": 8, "register": 7}
#: the kinds that write records (a heartbeat of an unfenced broker writes nothing)
CHANGES = ("alter", "create", "delete", "register")
_LISTENER = BrokerRegistrationRequestListener(name="PLAINTEXT", host="127.0.0.1", port=1)


class LoadFailure(AssertionError):
    """A client got an error answer, timed out or lost its connection while the daemon lived."""


class Load:
    def __init__(
        self,
        port: int,
        clients: int,
        rng: random.Random,
        weights: dict[str, int] | None = None,
        max_partitions: int = 16,
        max_topics: int = 6,
        listener_ports: dict[int, int] | None = None,
    ) -> None:
        self.weights = [(weights or DEFAULT_WEIGHTS).get(kind, 0) for kind in KINDS]
        self.max_partitions = max_partitions
        self.max_topics = max_topics
        self.cluster_id, self.data_epochs = register_data_brokers(port, listener_ports)
        self.clients = [Client(self, ClientModel(i, 100 + i), random.Random(rng.random())) for i in range(clients)]
        self.stop = threading.Event()
        self._killed = threading.Event()
        self._failures: list[str] = []
        self._lock = threading.Lock()
        self._armed: tuple[str, threading.Event] | None = None
        self._threads: list[threading.Thread] = []
        #: every request the clients sent: (client port, correlation id) -> (api key, version)
        self.requests: dict[tuple[int, int], tuple[int, int]] = {}

    # ------------------------------------------------------------------ the caller's side
    def start(self, port: int) -> None:
        """Start every client on the daemon listening on `port`."""
        self.stop.clear()
        self._killed.clear()
        self._failures.clear()
        self._armed = None
        for client in self.clients:
            client.counts.clear()
        self._threads = [threading.Thread(target=client.run, args=(port,), daemon=True) for client in self.clients]
        for thread in self._threads:
            thread.start()

    def trigger(self, kind: str) -> threading.Event:
        """An event set once a client is about to send a request of `kind` (or a client failed)."""
        event = threading.Event()
        self._armed = (kind, event)
        return event

    def killing(self) -> None:
        """The daemon is about to be killed: from now on a broken connection is expected."""
        self._killed.set()

    def halt(self) -> Counter[str]:
        """Stop every client; raise `LoadFailure` if any failed; return the answers by kind."""
        self.stop.set()
        for thread in self._threads:
            thread.join(60)
        if any(thread.is_alive() for thread in self._threads):
            self._failures.append("a client did not stop within 60 s")
        if self._failures:
            raise LoadFailure("the load failed:\n  " + "\n  ".join(self._failures))
        return sum((client.counts for client in self.clients), Counter())

    def reconcile(self, state: dict[str, Any]) -> Reconciled:
        return reconcile([client.model for client in self.clients], self.data_epochs, state)

    # ------------------------------------------------------------------ the clients' side
    def sending(self, kind: str) -> None:
        armed = self._armed
        if armed is not None and armed[0] == kind:
            armed[1].set()

    def fail(self, client: Client, exc: BaseException) -> None:
        """Record a client's failure, unless it is the kill's doing; stop the others."""
        if self._killed.is_set() and isinstance(exc, OSError):  # ConnectionError and timeouts too
            return
        in_flight = client.model.in_flight
        with self._lock:
            self._failures.append(f"client {client.model.index}, request in flight {in_flight}: {exc!r}")
        self.stop.set()
        if self._armed is not None:
            self._armed[1].set()  # a caller waiting for a moment must not wait for a dead load


class Client:
    def __init__(self, load: Load, model: ClientModel, rng: random.Random) -> None:
        self.load = load
        self.model = model
        self.rng = rng
        self.counts: Counter[str] = Counter()

    def run(self, port: int) -> None:
        try:
            with FencerClient(port, timeout=30) as connection:
                while not self.load.stop.is_set():
                    getattr(self, f"_{self._choose()}")(connection)
        except Exception as exc:
            self.load.fail(self, exc)

    def _choose(self) -> str:
        topics = len(self.model.topics)
        kind: str = self.rng.choices(KINDS, self.load.weights)[0]
        if topics == 0 or (kind == "delete" and topics == 1):
            return "create"
        if kind == "create" and topics >= self.load.max_topics:
            return "delete"
        return kind

    def _send(self, connection: FencerClient, in_flight: InFlight, request: Any, version: int) -> Any:
        self.model.in_flight = in_flight
        self.load.sending(in_flight.kind)
        api_key = request.API.key
        correlation_id = connection.send(request, version)
        self.load.requests[(connection.sock.getsockname()[1], correlation_id)] = (api_key, version)
        response = connection.receive(api_key, version, correlation_id)
        self.model.in_flight = None
        self.counts[in_flight.kind] += 1
        return response

    def _alter(self, connection: FencerClient) -> None:
        topic = self.model.topics[self.rng.choice(sorted(self.model.topics))]
        index = self.rng.randrange(len(topic.partitions))
        part = topic.partitions[index]
        isr = part.replicas[:2] if len(part.isr) == 3 else part.replicas
        data = AlterPartitionRequestPartitionData(
            partition_index=index, leader_epoch=part.leader_epoch, new_isr=isr, partition_epoch=part.partition_epoch
        )
        request = AlterPartitionRequest(
            broker_id=part.leader,
            broker_epoch=self.load.data_epochs[part.leader],
            topics=(AlterPartitionRequestTopicData(topic_id=topic.topic_id, partitions=(data,)),),
        )
        response = self._send(connection, InFlight("alter", topic.name, index, isr), request, 2)
        _expect_ok(f"AlterPartition of {topic.name}-{index}", response.error_code)
        result = response.topics[0].partitions[0]
        _expect_ok(f"AlterPartition of {topic.name}-{index}", result.error_code)
        topic.partitions[index] = replace(
            part,
            leader=result.leader_id,
            leader_epoch=result.leader_epoch,
            partition_epoch=result.partition_epoch,
            isr=tuple(result.isr),
        )

    def _heartbeat(self, connection: FencerClient) -> None:
        broker = self.rng.choice(DATA_BROKERS)
        request = BrokerHeartbeatRequest(
            broker_id=broker, broker_epoch=self.load.data_epochs[broker], current_metadata_offset=1 << 40
        )
        response = self._send(connection, InFlight("heartbeat"), request, 1)
        _expect_ok(f"BrokerHeartbeat of broker {broker}", response.error_code)

    def _create(self, connection: FencerClient) -> None:
        number = self.model.topics_started
        self.model.topics_started += 1
        name = f"c{self.model.index}-t{number}"
        count = self.rng.randint(1, self.load.max_partitions)
        replicas = tuple(tuple(DATA_BROKERS[(p + number + i) % 3] for i in range(3)) for p in range(count))
        assignments = tuple(
            CreateTopicsRequestCreatableReplicaAssignment(partition_index=p, broker_ids=replicas[p])
            for p in range(count)
        )
        topic = CreateTopicsRequestCreatableTopic(
            name=name, num_partitions=-1, replication_factor=-1, assignments=assignments
        )
        in_flight = InFlight("create", name, replicas=replicas)
        result = self._send(connection, in_flight, CreateTopicsRequest(topics=(topic,)), 7).topics[0]
        _expect_ok(f"CreateTopics of {name}", result.error_code, result.error_message)
        partitions = [PartitionModel.created(replicas[p]) for p in range(count)]
        self.model.topics[name] = TopicModel(name, result.topic_id, partitions)

    def _delete(self, connection: FencerClient) -> None:
        topic = self.model.topics[self.rng.choice(sorted(self.model.topics))]
        request = DeleteTopicsRequest(topics=(DeleteTopicsRequestDeleteTopicState(topic_id=topic.topic_id),))
        result = self._send(connection, InFlight("delete", topic.name), request, 6).responses[0]
        _expect_ok(f"DeleteTopics of {topic.name}", result.error_code, result.error_message)
        del self.model.topics[topic.name]
        self.model.deleted.add(topic.name)

    def _register(self, connection: FencerClient) -> None:
        incarnation = uuid.UUID(int=self.rng.getrandbits(128))
        request = BrokerRegistrationRequest(
            broker_id=self.model.broker_id,
            cluster_id=self.load.cluster_id,
            incarnation_id=incarnation,
            listeners=(_LISTENER,),
        )
        in_flight = InFlight("register", incarnation=incarnation)
        response = self._send(connection, in_flight, request, 3)
        _expect_ok(f"BrokerRegistration of broker {self.model.broker_id}", response.error_code)
        self.model.incarnation, self.model.broker_epoch = incarnation, response.broker_epoch


def register_data_brokers(
    port: int, listener_ports: dict[int, int] | None = None, brokers: tuple[int, ...] = DATA_BROKERS
) -> tuple[str, dict[int, int]]:
    """Register and unfence the data brokers (`brokers`); return the cluster id and their epochs.

    `listener_ports` gives a data broker a live control listener (else a port nobody listens on)."""
    with FencerClient(port) as client:
        cluster_id: str = client.request(DescribeClusterRequest(), 1).cluster_id
        epochs: dict[int, int] = {}
        for broker in brokers:
            request = BrokerRegistrationRequest(
                broker_id=broker,
                cluster_id=cluster_id,
                incarnation_id=uuid.UUID(int=broker),
                listeners=(replace(_LISTENER, port=(listener_ports or {}).get(broker, _LISTENER.port)),),
            )
            response = client.request(request, 3)
            _expect_ok(f"BrokerRegistration of broker {broker}", response.error_code)
            epochs[broker] = response.broker_epoch
            heartbeat = BrokerHeartbeatRequest(
                broker_id=broker, broker_epoch=epochs[broker], current_metadata_offset=1 << 40
            )
            response = client.request(heartbeat, 1)
            _expect_ok(f"BrokerHeartbeat of broker {broker}", response.error_code)
    return cluster_id, epochs


def _expect_ok(what: str, error_code: int, message: str | None = None) -> None:
    if error_code != 0:
        raise LoadFailure(f"{what}: error {error_code}" + (f" ({message})" if message else ""))
