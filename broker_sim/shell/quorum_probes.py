"""What the fleet asks of its own quorum's nodes on purpose while a controller fault is on:
a write at the faulted node, and pre-votes for a stale log.

Rules:
- A write at the faulted node (`write_at`): right after a node is cut off or paused, the fleet asks
  that node, at its own address (one connection, no list to move along), to create one topic,
  `fleet-<seed>-probe-<n>` (one partition, its replicas the first of the fleet's brokers from a place
  that turns with n, CreateTopics v7 so that the answer names the topic id). Cut off or paused, the
  node cannot have it committed before the fault ends: a leader whose lease still holds appends it
  (a divergent tail, for its successor to have truncated) and must answer nothing, or
  NOT_CONTROLLER; a follower answers NOT_CONTROLLER. Its answer is waited for up to the request
  timeout, never retried, and counted (`FleetStats.probes`, "write-at-faulted-node:<answer>"); an
  answer NONE is journalled as any created topic is (`TopicCreated`), so an acknowledgement the
  quorum never committed is `topic-lost` on the committed log.
- Pre-votes for a stale log (`VoteProber`): from the start of a fault until its measurement is
  over, every `VOTE_PROBE_S`, each node that runs and is not paused is asked a pre-vote
  (`model.quorum.pre_vote_request`) for the faulted node (the faulted node itself: for the lowest
  other id) in the node's own epoch: the first ask names epoch 0, which a node past it refuses
  with FENCED_LEADER_EPOCH naming its epoch, and each later ask names the epoch the node last
  named (never one above it: a pre-vote then changes nothing on the node). Only a node that the
  last leader seen before the fault named a voter holding the committed log
  (`LeaderView.committed_on` >= 1) is asked. Every answer that judged the vote (error NONE,
  granted or not) is journalled (`VoteProbed`) and counted ("stale-pre-vote:granted" or
  ":refused"); the checker decides (`quorum-stale-vote`).
"""

from __future__ import annotations

import logging

import trio

from broker_sim import journal
from broker_sim.model.quorum import STALE_LOG, VOTE_VERSION, LeaderView, pre_vote_request, vote_answer
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode, error_name
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
)
from protocol.messages.vote import VoteResponse
from protocol.spec import ZERO_UUID

from .connection import BadAnswer, ConnectionLost, ControllerConnection
from .context import FleetContext
from .proxy import Address
from .quorum import Quorum
from .quorum_connection import Probe

log = logging.getLogger("fencer.broker_sim.quorum_probes")
WRITE_VERSION = 7  # CreateTopics v7 names the topic id in its answer
VOTE_PROBE_S = 0.25
WRITE_PROBE = "write-at-faulted-node"
VOTE_PROBE = "stale-pre-vote"


def probe_topic(seed: int, index: int) -> str:
    return f"fleet-{seed}-probe-{index}"


async def write_at(ctx: FleetContext, address: Address, index: int) -> None:
    """The write at a faulted node (see the module rules)."""
    brokers = sorted(ctx.models)
    if not brokers:
        return
    name = probe_topic(ctx.seed, index)
    factor = min(3, len(brokers))
    replicas = tuple(brokers[(index + k) % len(brokers)] for k in range(factor))
    topic = CreateTopicsRequestCreatableTopic(
        name=name,
        num_partitions=-1,
        replication_factor=-1,
        assignments=(CreateTopicsRequestCreatableReplicaAssignment(partition_index=0, broker_ids=replicas),),
    )
    capture = ctx.recorder.capture.add if ctx.recorder.capture is not None else None
    connection = ControllerConnection((address,), "fleet-probe", capture, tls=ctx.client_tls)
    recorder, sent = ctx.recorder, ctx.now()
    try:
        response = await connection.request(
            CreateTopicsRequest(topics=(topic,), timeout_ms=30000), WRITE_VERSION, ctx.timing.request_timeout_s
        )
    except ConnectionLost:
        recorder.lost(ApiKey.CREATE_TOPICS)
        recorder.stats.probes[f"{WRITE_PROBE}:no answer"] += 1
        return
    except BadAnswer as exc:
        recorder.bad_answer(-1, ApiKey.CREATE_TOPICS, WRITE_VERSION, connection.last_correlation_id, str(exc))
        return
    finally:
        await connection.drop()
    recorder.answered(ApiKey.CREATE_TOPICS, ctx.now() - sent, response)
    assert isinstance(response, CreateTopicsResponse)
    codes = [result.error_code for result in response.topics]
    recorder.stats.probes[f"{WRITE_PROBE}:{error_name(codes[0]) if codes else 'no topic'}"] += 1
    for result in response.topics:
        if result.name == name and result.error_code == ErrorCode.NONE and result.topic_id != ZERO_UUID:
            log.info("the faulted node at %s:%d acknowledged topic %s", *address, name)
            ctx.topic_ids[name] = result.topic_id
            recorder.write(journal.TopicCreated(recorder.now_ns(), name, str(result.topic_id), 1, factor))


class VoteProber:
    """Pre-votes for a stale log, asked of every node while a fault is on (see the module rules)."""

    def __init__(self, quorum: Quorum, cluster: str) -> None:
        self.quorum = quorum
        self.cluster = cluster
        self.probes = {node: Probe(address, quorum.client_tls) for node, address in quorum.addresses.items()}
        self.epochs: dict[int, int] = {}  # the epoch each node last named

    async def run(self, ctx: FleetContext, faulted: int, before: LeaderView | None) -> None:
        """Ask every `VOTE_PROBE_S` until cancelled (the fault's measurement is over)."""
        if before is None or len(self.quorum.ids) < 2:
            return  # a sole voter has no other voter to stand as the stale candidate
        try:
            while True:
                async with trio.open_nursery() as nursery:
                    for node in self.quorum.ids:
                        known = before.committed_on(node)
                        target = self.quorum.nodes.get(node)
                        if known >= 1 and target is not None and target.running and not target.paused:
                            nursery.start_soon(self._ask, ctx, node, faulted, known)
                await trio.sleep(VOTE_PROBE_S)
        finally:
            with trio.CancelScope(shield=True):
                for probe in self.probes.values():
                    await probe.close()

    async def _ask(self, ctx: FleetContext, node: int, faulted: int, known: int) -> None:
        candidate = faulted if node != faulted else min(other for other in self.quorum.ids if other != node)
        epoch = self.epochs.get(node, 0)
        response = await self.probes[node].ask(pre_vote_request(self.cluster, node, candidate, epoch), VOTE_VERSION)
        if not isinstance(response, VoteResponse):
            return
        error, named, granted = vote_answer(response)
        if named > epoch:
            self.epochs[node] = named
        if error != ErrorCode.NONE:
            return
        ctx.recorder.stats.probes[f"{VOTE_PROBE}:{'granted' if granted else 'refused'}"] += 1
        last_offset, last_epoch = STALE_LOG
        ctx.recorder.write(
            journal.VoteProbed(
                ctx.recorder.now_ns(), node, candidate, epoch, last_offset, last_epoch, known, error, granted
            )
        )
