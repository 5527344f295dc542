"""The request probes on the broker lifecycle's APIs (BrokerHeartbeat, ControlledShutdown,
BrokerRegistration): how each of their kinds is built from what the broker knows
(`probes.Knowledge`); the kinds, the plans and the judging of their answers are `probes`'.

Rules:
- At the version the broker negotiated for the API (none: no probe):
  - "heartbeat-unregistered", "shutdown-unregistered": from a broker id no broker registers
    (`probes.unregistered_id`);
  - "registration-cluster-id": a cluster id other than the one DescribeCluster gave, for an id of
    `probes.UNREGISTERED_BASE` and up; "registration-negative-id": a negative id (both only once
    DescribeCluster gave the cluster id);
  - "registration-duplicate": its own id, the cluster id, a new incarnation id (a second process
    configured with its node id), only while its own session is surely valid: ACTIVE, not shutting
    down, the last heartbeat answered NONE and unfenced sent less than a third
    (`FRESH_SESSION_FRACTION`) of the session timeout ago (`Knowledge.heard_at`):
    DUPLICATE_BROKER_REGISTRATION. What its answer means to the checker and to the broker: `probes`.
"""

from __future__ import annotations

import random
import uuid

from protocol.api_keys import ApiKey

from . import requests
from .probes import (
    HEARTBEAT_UNREGISTERED,
    REGISTRATION_CLUSTER_ID,
    REGISTRATION_DUPLICATE,
    REGISTRATION_NEGATIVE_ID,
    SHUTDOWN_UNREGISTERED,
    UNREGISTERED_BASE,
    Builder,
    Knowledge,
    ProbePlan,
    unregistered_id,
)

FRESH_SESSION_FRACTION = 1 / 3  # a duplicate registration only within this part of the session


def _heartbeat(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    version = known.versions.get(ApiKey.BROKER_HEARTBEAT)
    if version is None:
        return None
    broker_id, epoch = unregistered_id(rng), rng.randrange(1 << 20)
    body = requests.broker_heartbeat(version, broker_id, epoch, epoch, False, ())
    detail = {"broker_id": broker_id, "request_broker_epoch": epoch}
    return ProbePlan(kind, ApiKey.BROKER_HEARTBEAT, version, body, known.broker_epoch, detail)


def _shutdown(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    version = known.versions.get(ApiKey.CONTROLLED_SHUTDOWN)
    if version is None:
        return None
    broker_id, epoch = unregistered_id(rng), rng.choice((-1, rng.randrange(1 << 20)))
    body = requests.controlled_shutdown(version, broker_id, epoch)
    detail = {"broker_id": broker_id, "request_broker_epoch": body.broker_epoch}
    return ProbePlan(kind, ApiKey.CONTROLLED_SHUTDOWN, version, body, known.broker_epoch, detail)


def _registration(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    version = known.versions.get(ApiKey.BROKER_REGISTRATION)
    if version is None or not known.cluster_id:
        return None
    if kind == REGISTRATION_CLUSTER_ID:
        broker_id = UNREGISTERED_BASE + rng.randrange(1 << 20)
        cluster_id = f"probe-{rng.getrandbits(64):016x}"
    else:
        broker_id, cluster_id = -1 - rng.randrange(4), known.cluster_id
    incarnation = uuid.UUID(int=rng.getrandbits(128))
    log_dirs = (uuid.UUID(int=rng.getrandbits(128)),)
    body = requests.broker_registration(version, broker_id, cluster_id, incarnation, "127.0.0.1", 1, log_dirs, -1)
    detail = {"broker_id": broker_id, "cluster_id": cluster_id}
    return ProbePlan(kind, ApiKey.BROKER_REGISTRATION, version, body, known.broker_epoch, detail)


def _duplicate_registration(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    version = known.versions.get(ApiKey.BROKER_REGISTRATION)
    heard_at = known.heard_at
    if version is None or not known.cluster_id or heard_at is None or known.broker_epoch < 0:
        return None
    if known.now - heard_at >= known.session_timeout_s * FRESH_SESSION_FRACTION:
        return None
    incarnation = uuid.UUID(int=rng.getrandbits(128))
    log_dirs = (uuid.UUID(int=rng.getrandbits(128)),)
    body = requests.broker_registration(
        version, known.broker_id, known.cluster_id, incarnation, "127.0.0.1", 1, log_dirs, -1
    )
    detail = {
        "broker_id": known.broker_id,
        "incarnation_id": str(incarnation),
        "heard_ms_before_sent": round((known.now - heard_at) * 1000),
        "session_timeout_ms": round(known.session_timeout_s * 1000),
    }
    return ProbePlan(kind, ApiKey.BROKER_REGISTRATION, version, body, known.broker_epoch, detail, heard_at)


BUILDERS: dict[str, Builder] = {
    HEARTBEAT_UNREGISTERED: _heartbeat,
    SHUTDOWN_UNREGISTERED: _shutdown,
    REGISTRATION_CLUSTER_ID: _registration,
    REGISTRATION_NEGATIVE_ID: _registration,
    REGISTRATION_DUPLICATE: _duplicate_registration,
}
