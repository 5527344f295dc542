"""The fleet's admin client (only in the process with `create_topics`): topic creation, and in the
rolling-restart and chaos scenarios preferred leader elections and short-lived scratch topics.

Rules:
- Topics are created once the process's own brokers are unfenced (bounded wait), over the brokers
  the controller lists (DescribeCluster: all of ours, and when others are listed too, the list
  must hold still for a second), with manual assignments striped as Kafka places replicas and a
  seeded start, so that the same seed gives the same leaders. Names: "fleet-<seed>-<t>". Topics
  go in requests of at most `PARTITIONS_PER_REQUEST` partitions (the controller refuses more than
  10,000 records per request), the version cycling over CreateTopics 2-7. A request of several
  topics refused POLICY_VIOLATION (a controller configured with a lower record cap refuses every
  topic of it) is sent again one topic per request, as an operator would. A refused topic (e.g.
  TOPIC_ALREADY_EXISTS: another fleet made it) is counted, logged and left alone; brokers learn
  topics from LeaderAndIsr either way. Each answer for one of its topics is journalled
  (`CreateAnswered`), so that a checker can judge a refusal against the log.
- `TopicCreated` is journalled with the topic id from the answer (v7) or, for older versions, once
  a LeaderAndIsr v5+ taught it; not at all if none did within `ID_WAIT_S` (the entry needs an id).
- Chaos: first a scratch topic "fleet-<seed>-scratch-first", created once the topics are and
  deleted a second later (a deletion early in the run, whose StopReplica duties a short run can
  judge within their bound); then every few seconds (seeded) either ElectLeaders PREFERRED
  (versions 0-2, for one topic or, less often, for all partitions) or a scratch topic
  "fleet-<seed>-scratch-<n>" whose replicas the controller places (a partition count and a
  replication factor: the fleet's half the time, else the controller's default, -1, or 1 or 2;
  no assignment: the checker holds the placement to the log's rules, distinct replicas of
  the factor asked), deleted a few seconds later (DeleteTopics 1-6; v6 by id
  when known; each answer for its topic journalled, `DeleteAnswered`). Rolling restart:
  ElectLeaders every few seconds, so that leadership returns to restarted brokers.
- Chaos, besides: admin probes (`broker_sim.model.admin_probes`: CreateTopics,
  DeleteTopics and ElectLeaders requests a correct controller must refuse), one every second or
  two once the topics are created, on what the admin knows: the fleet topics answered NONE or
  TOPIC_ALREADY_EXISTS, the brokers DescribeCluster listed, the partitions the process's active
  brokers lead. Each is sent as any admin request (NOT_CONTROLLER: again at the next controller)
  and journalled with its answer (`AdminProbe`, when it was sent and answered; no answer: no
  errors); a probe's answer never changes what the admin knows (no topic id is learnt from it).
  A fresh topic a probe named that the controller wrongly created is deleted two seconds later
  (by name), so that it does not outlive the probe.
- Errors are counted like any answer; a network error or a bad answer is counted too (a bad
  answer also journalled), and the request is not sent again, with two exceptions that a Kafka
  admin client retries too: an answer that says NOT_CONTROLLER (at the top level or for a topic or
  partition) and a connection that could not be opened (nothing was sent). Either way the
  connection has moved to the next controller of the list (journalled, broker -1, channel
  "admin"), and the request goes again there, whole, after a backoff, for up to `RETRY_S` (a
  controller that is not the active one answers NOT_CONTROLLER for every topic of a request).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence

import trio

from broker_sim import journal
from broker_sim.model import admin_probes, versions
from broker_sim.model.answers import answer_label, misfit, not_controller
from broker_sim.model.lifecycle import Phase
from broker_sim.model.views import PartitionView
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode, error_name
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
)
from protocol.messages.delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsRequestDeleteTopicState,
    DeleteTopicsResponse,
)
from protocol.messages.describe_cluster import DescribeClusterRequest, DescribeClusterResponse
from protocol.messages.elect_leaders import (
    PREFERRED,
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
)
from protocol.records.metadata import NO_LEADER
from protocol.spec import ZERO_UUID, Data

from .connection import BadAnswer, ConnectionLost, ControllerConnection
from .context import FleetContext
from .recorder import api_name

ID_WAIT_S = 10.0
RETRY_S = 30.0  # how long a request answered NOT_CONTROLLER (or not sent) is tried again
SCRATCH_PARTITIONS = 2
PARTITIONS_PER_REQUEST = 2500
#: chaos's first scratch topic: its requests' versions are counter 0's (the counter starts at 1, so
#: the seeded sequence of everything else is unchanged), and it lives this long, so that even a
#: short run deletes a topic early enough for the StopReplica duty to be judged within its bound
FIRST_SCRATCH_COUNTER = 0
FIRST_SCRATCH_LIFE_S = 1.0
#: how often an election names no partitions (all of them): in a large cluster such an election
#: moves thousands of leaders and every broker gets a LeaderAndIsr at once (Kafka's automatic
#: rebalance runs every five minutes)
ALL_PARTITIONS_CHANCE = 0.2
PROBE_TOPIC_LIFE_S = 2.0  # a topic an admin probe wrongly created is deleted this much later
log = logging.getLogger("fencer.broker_sim.admin")


def topic_name(seed: int, index: int) -> str:
    return f"fleet-{seed}-{index}"


def striped(brokers: list[int], partitions: int, replication_factor: int, rng: random.Random) -> list[list[int]]:
    """Kafka's striped assignment: leaders round-robin from a seeded start, followers at a shift
    that grows every len(brokers) partitions."""
    count = len(brokers)
    start = rng.randrange(count)
    shift0 = rng.randrange(count)
    out = []
    for p in range(partitions):
        first = (start + p) % count
        shift = (shift0 + p // count) % max(1, count - 1)
        followers = [brokers[(first + 1 + (shift + j) % (count - 1)) % count] for j in range(replication_factor - 1)]
        out.append([brokers[first], *followers])
    return out


class Admin:
    def __init__(
        self,
        ctx: FleetContext,
        topics: int,
        partitions: int,
        replication_factor: int,
        own_brokers: list[int],
        factors: Sequence[int] = (),
        controller_defaults: tuple[int, int] | None = None,
    ) -> None:
        """`factors`: the replication factor of the first topics, in order (the rest:
        `replication_factor`); `controller_defaults`: FleetConfig's."""
        self.ctx = ctx
        self.topics = topics
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.factors = {topic_name(ctx.seed, index): factor for index, factor in enumerate(factors)}
        self.own_brokers = own_brokers
        self.controller_defaults = controller_defaults
        capture = ctx.recorder.capture.add if ctx.recorder.capture is not None else None
        self.connection = ControllerConnection(ctx.controllers, "fleet-admin", capture, self._switched, ctx.client_tls)
        self.rng = random.Random(f"{ctx.seed}:admin")
        self.counter = 0
        self.brokers: list[int] = []
        self.created: list[str] = []  # the fleet topics that exist (answered NONE or TOPIC_ALREADY_EXISTS)
        self.probes = admin_probes.AdminProbes(ctx.seed, enabled=ctx.scenario == "chaos")

    async def run(self) -> None:
        await self._wait_for_own_brokers()
        self.brokers = await self._cluster_brokers()
        async with trio.open_nursery() as nursery:
            per_request = max(1, PARTITIONS_PER_REQUEST // self.partitions)
            names = [topic_name(self.ctx.seed, index) for index in range(self.topics)]
            for start in range(0, len(names), per_request):
                self.counter += 1
                group = names[start : start + per_request]
                made, over_cap = await self._create(nursery, group, self.partitions, self.counter)
                self.created.extend(made)
                for name in over_cap if len(group) > 1 else ():
                    self.counter += 1
                    self.created.extend((await self._create(nursery, [name], self.partitions, self.counter))[0])
            if self.ctx.scenario == "chaos":
                await self._chaos()
            elif self.ctx.scenario == "rolling-restart":
                while True:
                    await trio.sleep(self.rng.uniform(6.0, 10.0))
                    await self._elect()

    async def call(self, body: Data, version: int) -> Data | None:
        """One admin request, tried again at the next controller while it is answered NOT_CONTROLLER or
        cannot be sent (for up to `RETRY_S`); None when it got no usable answer."""
        deadline = self.ctx.now() + RETRY_S
        failures = 0
        while True:
            try:
                response = await self._exchange(body, version)
            except ConnectionLost as exc:
                if exc.sent or self.ctx.now() >= deadline:
                    return None
            else:
                if response is None or not not_controller(response) or self.ctx.now() >= deadline:
                    return response
            failures += 1
            await trio.sleep(self.ctx.timing.backoff(failures))

    async def _exchange(self, body: Data, version: int) -> Data | None:
        """One admin request once; None after a bad answer (counted, journalled); raises `ConnectionLost`
        (counted)."""
        recorder = self.ctx.recorder
        sent = self.ctx.now()
        try:
            response = await self.connection.request(body, version, self.ctx.timing.request_timeout_s)
        except ConnectionLost:
            recorder.lost(body.API.key)
            raise
        except BadAnswer as exc:
            recorder.bad_answer(-1, body.API.key, version, self.connection.last_correlation_id, str(exc))
            return None
        problem = misfit(body, version, response)
        if problem is not None:
            recorder.bad_answer(-1, body.API.key, version, self.connection.last_correlation_id, problem)
            return None
        now = self.ctx.now()
        self.ctx.answered(now, response)
        recorder.answered(body.API.key, now - sent, response)
        return response

    def _switched(self, before: str, after: str, reason: str, api_name: str, detail: str) -> None:
        self.ctx.recorder.controller_switched(-1, "admin", before, after, reason, api_name, detail)

    # ------------------------------------------------------------------ set-up
    async def _wait_for_own_brokers(self) -> None:
        deadline = self.ctx.now() + 3 * self.ctx.timing.session_timeout_s + 10.0
        while self.ctx.now() < deadline:
            models = [self.ctx.models[b] for b in self.own_brokers]
            if all(model.lifecycle.phase == Phase.ACTIVE for model in models):
                return
            await trio.sleep(0.1)

    async def _cluster_brokers(self) -> list[int]:
        listed: list[int] = []
        deadline = self.ctx.now() + 10.0
        while self.ctx.now() < deadline:
            response = await self.call(DescribeClusterRequest(), 0)
            now = sorted(b.broker_id for b in response.brokers) if isinstance(response, DescribeClusterResponse) else []
            if set(self.own_brokers) <= set(now) and (now == listed or set(now) == set(self.own_brokers)):
                return now
            listed = now
            await trio.sleep(1.0)
        return listed or sorted(self.own_brokers)

    async def _create(
        self, nursery: trio.Nursery, names: list[str], partitions: int, counter: int, *, placed: bool = False
    ) -> tuple[list[str], list[str]]:
        """Create topics `names` (`placed`: the controller places their replicas); the names that
        exist now (answered NONE or TOPIC_ALREADY_EXISTS), and those refused POLICY_VIOLATION."""
        version = versions.admin_version(self.ctx.seed, counter, ApiKey.CREATE_TOPICS)
        factors = {name: min(self.factors.get(name, self.replication_factor), len(self.brokers)) for name in names}
        if placed:
            shapes = {name: self._placed_shape(name, partitions, factors[name]) for name in names}
            topics = tuple(
                CreateTopicsRequestCreatableTopic(name=name, num_partitions=count, replication_factor=factor)
                for name, (count, factor) in shapes.items()
            )
        else:
            shapes = {name: (partitions, factors[name]) for name in names}
            topics = tuple(self._creatable(name, partitions, factors[name]) for name in names)
        sent_ns = self.ctx.recorder.now_ns()
        response = await self.call(CreateTopicsRequest(topics=topics, timeout_ms=30000), version)
        if not isinstance(response, CreateTopicsResponse):
            return [], []
        answered_ns = self.ctx.recorder.now_ns()
        named = {
            topic.name: list(dict.fromkeys(b for a in topic.assignments for b in a.broker_ids)) for topic in topics
        }
        existing, over_cap = [], []
        for result in response.topics:
            if result.name in named:
                entry = journal.CreateAnswered(
                    answered_ns, sent_ns, version, result.name, named[result.name], result.error_code,
                    self._resolved(shapes[result.name])[1] if placed else 0,
                )  # fmt: skip
                self.ctx.recorder.write(entry)
            if result.error_code in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS) and result.name in names:
                existing.append(result.name)
            elif result.error_code == ErrorCode.POLICY_VIOLATION and result.name in names:
                over_cap.append(result.name)
            if result.error_code != ErrorCode.NONE:
                log.warning(
                    "topic %s not created: %s %s",
                    result.name,
                    error_name(result.error_code),
                    result.error_message or "",
                )
                continue
            if result.topic_id != ZERO_UUID:
                self.ctx.topic_ids[result.name] = result.topic_id
            if result.name in shapes:
                nursery.start_soon(self._journal_created, result.name, *self._resolved(shapes[result.name]))
        return existing, over_cap

    def _placed_shape(self, name: str, partitions: int, factor: int) -> tuple[int, int]:
        """The partition count and replication factor asked of the controller's placement for
        `name` (seeded by the name, apart from the admin's other draws): the count given, or the
        controller's default (-1) one time in four; the factor `factor` half the time, else the
        default, 1 or 2 (at most `factor`), so that most placements have followers to place."""
        rng = random.Random(f"{self.ctx.seed}:placed:{name}")
        count = -1 if rng.random() < 1 / 4 else partitions
        return count, min(factor, rng.choice((-1, 1, 2, factor, factor, factor)))

    def _resolved(self, shape: tuple[int, int]) -> tuple[int, int]:
        """A placed topic's (count, factor) with -1 read as the controller's default where the run
        knows it (`FleetConfig.controller_defaults`); else as asked."""
        if self.controller_defaults is None:
            return shape
        (count, factor), (default_count, default_factor) = shape, self.controller_defaults
        return default_count if count == -1 else count, default_factor if factor == -1 else factor

    def _creatable(self, name: str, partitions: int, factor: int) -> CreateTopicsRequestCreatableTopic:
        rng = random.Random(f"{self.ctx.seed}:placement:{name}")
        assignments = tuple(
            CreateTopicsRequestCreatableReplicaAssignment(partition_index=p, broker_ids=tuple(replicas))
            for p, replicas in enumerate(striped(self.brokers, partitions, factor, rng))
        )
        return CreateTopicsRequestCreatableTopic(
            name=name, num_partitions=-1, replication_factor=-1, assignments=assignments
        )

    async def _journal_created(self, name: str, partitions: int, factor: int) -> None:
        deadline = self.ctx.now() + ID_WAIT_S
        while name not in self.ctx.topic_ids and self.ctx.now() < deadline:
            await trio.sleep(0.1)
        topic_id = self.ctx.topic_ids.get(name)
        if topic_id is None:
            log.info("topic %s: its id was never learnt, no TopicCreated entry", name)
            return
        self.ctx.recorder.write(
            journal.TopicCreated(self.ctx.recorder.now_ns(), name, str(topic_id), partitions, factor)
        )

    # ------------------------------------------------------------------ chaos
    async def _chaos(self) -> None:
        scratch = 0
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._probe)
            first = f"fleet-{self.ctx.seed}-scratch-first"
            await self._create(nursery, [first], SCRATCH_PARTITIONS, FIRST_SCRATCH_COUNTER)
            nursery.start_soon(self._delete_later, first, FIRST_SCRATCH_LIFE_S, FIRST_SCRATCH_COUNTER)
            while True:
                await trio.sleep(self.rng.uniform(3.0, 6.0))
                if self.rng.random() < 0.5:
                    await self._elect()
                else:
                    name = f"fleet-{self.ctx.seed}-scratch-{scratch}"
                    scratch += 1
                    self.counter += 1
                    await self._create(nursery, [name], SCRATCH_PARTITIONS, self.counter, placed=True)
                    nursery.start_soon(self._delete_later, name, self.rng.uniform(2.0, 5.0))

    async def _elect(self) -> None:
        self.counter += 1
        version = versions.admin_version(self.ctx.seed, self.counter, ApiKey.ELECT_LEADERS)
        if self.rng.random() < ALL_PARTITIONS_CHANCE or self.topics == 0:
            wanted = None
        else:
            name = topic_name(self.ctx.seed, self.rng.randrange(self.topics))
            wanted = (ElectLeadersRequestTopicPartitions(topic=name, partitions=tuple(range(self.partitions))),)
        sent_ns = self.ctx.recorder.now_ns()
        response = await self.call(ElectLeadersRequest(election_type=PREFERRED, topic_partitions=wanted), version)
        if isinstance(response, ElectLeadersResponse):
            results = [
                [topic.topic, partition.partition_id, partition.error_code]
                for topic in response.replica_election_results
                for partition in topic.partition_result
            ]
            answered = journal.ElectAnswered(
                self.ctx.recorder.now_ns(), sent_ns, version, PREFERRED, response.error_code, results
            )
            self.ctx.recorder.write(answered)

    async def _delete_later(self, name: str, delay_s: float, counter: int | None = None) -> None:
        """Delete topic `name` after `delay_s`, its version chosen by `counter` (default: the next)."""
        await trio.sleep(delay_s)
        if counter is None:
            self.counter += 1
            counter = self.counter
        version = versions.admin_version(self.ctx.seed, counter, ApiKey.DELETE_TOPICS)
        if version >= 6:
            topic_id = self.ctx.topic_ids.get(name)
            state = (
                DeleteTopicsRequestDeleteTopicState(topic_id=topic_id)
                if topic_id is not None
                else DeleteTopicsRequestDeleteTopicState(name=name)
            )
            request = DeleteTopicsRequest(topics=(state,), timeout_ms=30000)
        else:
            request = DeleteTopicsRequest(topic_names=(name,), timeout_ms=30000)
        known = self.ctx.topic_ids.get(name)
        sent_ns = self.ctx.recorder.now_ns()
        response = await self.call(request, version)
        if isinstance(response, DeleteTopicsResponse):
            by_id = version >= 6 and known is not None
            error = next(
                (r.error_code for r in response.responses if (r.topic_id == known if by_id else r.name == name)), -1
            )
            entry = journal.DeleteAnswered(
                self.ctx.recorder.now_ns(), sent_ns, version, name, str(known or ""), by_id, error
            )
            self.ctx.recorder.write(entry)

    # ------------------------------------------------------------------ admin probes (chaos)
    async def _probe(self) -> None:
        """Send the admin probes as they come due, one at a time (see the module rules)."""
        self.probes.start(self.ctx.now())
        async with trio.open_nursery() as nursery:
            while self.probes.enabled:
                await self.ctx.sleep_until(self.probes.next_at)
                plan = self.probes.take(self.ctx.now(), self._knowledge())
                if plan is not None:
                    await self._send_probe(nursery, plan)

    def _knowledge(self) -> admin_probes.AdminKnowledge:
        created = set(self.created)
        led = {
            key
            for model in self.ctx.models.values()
            if model.lifecycle.phase == Phase.ACTIVE
            for key in model.leadership.led
            if key[0] in created
        }
        newest: dict[tuple[str, int], PartitionView] = {}
        for model in self.ctx.models.values():
            for key, view in model.views.items():
                if key[0] in created and view.hosted and (key not in newest or view.epochs > newest[key].epochs):
                    newest[key] = view
        leaderless = tuple(sorted(key for key, view in newest.items() if view.leader == NO_LEADER))
        return admin_probes.AdminKnowledge(
            self.ctx.seed, tuple(self.created), tuple(self.brokers), tuple(sorted(led)), leaderless
        )

    async def _send_probe(self, nursery: trio.Nursery, plan: admin_probes.AdminProbePlan) -> None:
        recorder = self.ctx.recorder
        sent_ns = recorder.now_ns()
        response = await self.call(plan.body, plan.version)
        errors, accepted = admin_probes.judge(response) if response is not None else ([], False)
        answer = answer_label(errors)
        recorder.stats.probes[f"admin:{plan.probe}:{answer}"] += 1
        recorder.write(
            journal.AdminProbe(
                wall_ns=recorder.now_ns(),
                sent_wall_ns=sent_ns,
                api=api_name(plan.api_key),
                api_version=plan.version,
                probe=plan.probe,
                errors=errors,
                accepted=accepted,
                detail=dict(plan.detail),
            )
        )
        if accepted and plan.creates is not None:
            log.warning("admin probe %s was accepted: topic %s is deleted again", plan.probe, plan.creates)
            nursery.start_soon(self._delete_later, plan.creates, PROBE_TOPIC_LIFE_S, self.probes.built)
