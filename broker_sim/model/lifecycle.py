"""A broker's lifecycle channel: DescribeCluster -> ApiVersions -> BrokerRegistration -> heartbeats.

Rules (semantics.md "Brokers"; Kafka's BrokerLifecycleManager):
- An incarnation starts by learning the cluster id (DescribeCluster), then negotiates versions
  (ApiVersions; on UNSUPPORTED_VERSION it retries at the highest version the controller listed for
  key 18, KIP-511), then registers with its incarnation id, listener and log dirs.
- Registration NONE: the broker holds the answered epoch and is fenced; DUPLICATE_BROKER_REGISTRATION
  (the previous incarnation's session is still valid) retries the same incarnation after a
  heartbeat interval; INCONSISTENT_CLUSTER_ID starts again from DescribeCluster; anything else and
  network errors retry with backoff.
- Heartbeats carry the broker epoch and a metadata offset: the first of an incarnation reports one
  less than its registration offset (not yet caught up), later ones the registration offset, which
  the controller takes as caught up. While fenced or shutting down a heartbeat follows every
  answer after `fenced_heartbeat_s`; once unfenced they are due every `heartbeat_s` from the
  previous due time, so lateness is measured against a fixed schedule. The first one after
  unfencing waits a seeded fraction of the interval (`phase`), so that brokers registered
  together do not all heartbeat at the same instant. STALE_BROKER_EPOCH
  re-registers the same incarnation; other errors and network errors retry after a short backoff
  (never longer than a heartbeat interval).
- NOT_CONTROLLER (41: a controller of a quorum that is not the active one) is retriable at every
  step, like a network error: DescribeCluster, ApiVersions and the registration (the same
  incarnation) go again after the backoff, heartbeats go on after theirs. The shell's connection
  has moved to the next controller of the fleet's list meanwhile.
- IsFenced after being unfenced is recorded (`FencedSeen`); ShouldShutDown ends a shutdown that
  asked with WantShutDown. An answer that calls a heartbeat below the registration offset caught
  up, or unfences the broker on it, is a `ShapeProblem` (Kafka unfences only caught-up brokers);
  so is an ApiVersions answered with another error than UNSUPPORTED_VERSION (the fleet's requests
  are well formed, and every node of a quorum answers ApiVersions).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from enum import Enum

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode, error_name
from protocol.messages.api_versions import ApiVersionsResponse
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.messages.broker_registration import BrokerRegistrationResponse
from protocol.messages.describe_cluster import DescribeClusterResponse
from protocol.spec import Data
from protocol.versions import Versions

from . import requests, versions
from .events import LIFECYCLE, Event, FencedSeen, Outgoing, Registered, ShapeProblem, Unfenced
from .timing import Timing


class Phase(Enum):
    DOWN = "down"
    DESCRIBING = "describing"
    NEGOTIATING = "negotiating"
    REGISTERING = "registering"
    FENCED = "fenced"
    ACTIVE = "active"
    SHUT_DOWN = "shut-down"


class Lifecycle:
    def __init__(
        self, broker_id: int, seed: int, timing: Timing, log_dirs: Sequence[uuid.UUID], phase: float = 0.0
    ) -> None:
        self.broker_id = broker_id
        self.phase_fraction = phase  # in [0, 1): where in the heartbeat interval this broker's heartbeats fall
        self.seed = seed
        self.timing = timing
        self.log_dirs = tuple(log_dirs)
        self.registered_dirs: tuple[uuid.UUID, ...] = ()  # the LogDirs of the registration in flight
        self.first_contact = versions.first_contact(seed, broker_id)
        self.phase = Phase.DOWN
        self.epoch = -1
        self.previous_epoch = -1
        self.incarnation_id = uuid.UUID(int=0)
        self.host = ""
        self.port = 0
        self.security_protocol = 0  # the listener's, as registered (protocol.security_protocol)
        self.cluster_id = ""
        self.versions: dict[int, int] = {}
        self.api_versions_version = self.first_contact[ApiKey.API_VERSIONS]
        self.retry_at = 0.0
        self.failures = 0
        self.next_heartbeat = 0.0
        self.heartbeats_answered = 0
        self.last_heartbeat_sent: float | None = None
        self.longest_gap_s = 0.0
        self.want_shut_down = False
        self.shutting_down = False  # a controlled shutdown began in this incarnation (fencing is intended)
        self.offline_dirs: tuple[uuid.UUID, ...] = ()
        self.in_flight = False

    # ------------------------------------------------------------------ incarnations
    def start(self, t: float, incarnation_id: uuid.UUID, host: str, port: int, security_protocol: int = 0) -> None:
        self.phase = Phase.DESCRIBING
        if self.epoch >= 0:
            self.previous_epoch = self.epoch
        self.epoch = -1
        self.incarnation_id = incarnation_id
        self.host, self.port, self.security_protocol = host, port, security_protocol
        self.api_versions_version = self.first_contact[ApiKey.API_VERSIONS]
        self.retry_at = t
        self.failures = 0
        self.heartbeats_answered = 0
        self.last_heartbeat_sent = None
        self.longest_gap_s = 0.0
        self.want_shut_down = False
        self.shutting_down = False
        self.offline_dirs = ()
        self.in_flight = False

    def stop(self, phase: Phase = Phase.DOWN) -> None:
        self.phase = phase
        self.in_flight = False

    @property
    def registered(self) -> bool:
        phase = self.phase  # identity, not set membership: enum hashing is slow on the hot path
        return phase is Phase.FENCED or phase is Phase.ACTIVE

    # ------------------------------------------------------------------ requests
    def next_request(self, t: float) -> Outgoing | float:
        """The request to send now, or the time to ask again."""
        if self.in_flight or self.phase in (Phase.DOWN, Phase.SHUT_DOWN):
            return float("inf")
        if self.registered:
            if t < self.next_heartbeat:
                return self.next_heartbeat
            return self._sent(self._heartbeat(self.next_heartbeat))
        if t < self.retry_at:
            return self.retry_at
        if self.phase == Phase.DESCRIBING:
            version = self.first_contact[ApiKey.DESCRIBE_CLUSTER]
            return self._sent(Outgoing(LIFECYCLE, "describe", version, requests.describe_cluster(version)))
        if self.phase == Phase.NEGOTIATING:
            version = self.api_versions_version
            return self._sent(Outgoing(LIFECYCLE, "api-versions", version, requests.api_versions(version)))
        version = self.versions.get(ApiKey.BROKER_REGISTRATION, 0)
        body = requests.broker_registration(
            version,
            self.broker_id,
            self.cluster_id,
            self.incarnation_id,
            self.host,
            self.port,
            self.log_dirs,
            self.previous_epoch,
            self.security_protocol,
        )
        self.registered_dirs = tuple(body.log_dirs)
        return self._sent(Outgoing(LIFECYCLE, "register", version, body))

    def _sent(self, out: Outgoing) -> Outgoing:
        self.in_flight = True
        return out

    def _heartbeat(self, due: float) -> Outgoing:
        version = self.versions.get(ApiKey.BROKER_HEARTBEAT, 0)
        offset = self.epoch - 1 if self.heartbeats_answered == 0 else self.epoch
        body = requests.broker_heartbeat(
            version, self.broker_id, self.epoch, offset, self.want_shut_down, self.offline_dirs
        )
        return Outgoing(LIFECYCLE, "heartbeat", version, body, due=due)

    def heartbeat_sent(self, t: float) -> None:
        """The shell sent a heartbeat at `t` (for the longest gap between heartbeats)."""
        if self.last_heartbeat_sent is not None:
            self.longest_gap_s = max(self.longest_gap_s, t - self.last_heartbeat_sent)
        self.last_heartbeat_sent = t

    # ------------------------------------------------------------------ answers
    def answered(self, out: Outgoing, response: Data, t: float) -> list[Event]:
        self.in_flight = False
        if self.phase in (Phase.DOWN, Phase.SHUT_DOWN):
            return []
        if isinstance(response, BrokerHeartbeatResponse):
            return self._heartbeat_answer(out, response, t)
        if isinstance(response, DescribeClusterResponse):
            if response.error_code == ErrorCode.NONE and response.cluster_id:
                self.cluster_id = response.cluster_id
                self._advance(Phase.NEGOTIATING, t)
            else:
                self._back_off(t)
        elif isinstance(response, ApiVersionsResponse):
            return self._api_versions_answer(out, response, t)
        elif isinstance(response, BrokerRegistrationResponse):
            return self._registration_answer(response, t)
        return []

    def failed(self, out: Outgoing, t: float) -> None:
        """No usable answer (network error, timeout, bad answer): retry with backoff."""
        self.in_flight = False
        self.failures += 1
        if out.purpose == "heartbeat":
            self.next_heartbeat = t + min(self.timing.backoff(self.failures), self.timing.heartbeat_s / 2)
        else:
            self.retry_at = t + self.timing.backoff(self.failures)

    def _advance(self, phase: Phase, t: float) -> None:
        self.phase = phase
        self.failures = 0
        self.retry_at = t

    def _back_off(self, t: float) -> None:
        self.failures += 1
        self.retry_at = t + self.timing.backoff(self.failures)

    def _api_versions_answer(self, out: Outgoing, response: ApiVersionsResponse, t: float) -> list[Event]:
        ranges = {entry.api_key: Versions(entry.min_version, entry.max_version) for entry in response.api_keys}
        if response.error_code == ErrorCode.UNSUPPORTED_VERSION and ApiKey.API_VERSIONS in ranges:
            self.api_versions_version = min(
                ranges[ApiKey.API_VERSIONS].highest, versions.ours(ApiKey.API_VERSIONS).highest
            )
            self.failures += 1
            self.retry_at = t
        elif response.error_code == ErrorCode.NONE:
            self.versions = versions.negotiate(self.seed, self.broker_id, ranges)
            self._advance(Phase.REGISTERING, t)
        else:
            self._back_off(t)
            # the request is well formed (v3+ names valid client software), and any node answers it
            # (KIP-511): only NONE or UNSUPPORTED_VERSION are right
            reason = f"a well-formed ApiVersions v{out.version} was answered {error_name(response.error_code)}"
            return [ShapeProblem(ApiKey.API_VERSIONS, out.version, reason)]
        return []

    def _registration_answer(self, response: BrokerRegistrationResponse, t: float) -> list[Event]:
        if response.error_code == ErrorCode.NONE:
            self.epoch = response.broker_epoch
            self._advance(Phase.FENCED, t)
            self.next_heartbeat = t
            return [Registered(self.incarnation_id, self.epoch, self.registered_dirs)]
        if response.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION:
            self.retry_at = t + self.timing.heartbeat_s
        elif response.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID:
            self.phase = Phase.DESCRIBING
            self._back_off(t)
        else:
            self._back_off(t)
        return []

    def _caught_up_problem(self, out: Outgoing, response: BrokerHeartbeatResponse) -> list[Event]:
        """A heartbeat whose metadata offset is below the broker's registration (its epoch) is not
        caught up: answered caught up, or unfenced from fenced, the answer does not fit it."""
        body = out.body
        assert isinstance(body, BrokerHeartbeatRequest)
        if body.current_metadata_offset >= body.broker_epoch:
            return []
        unfenced = self.phase == Phase.FENCED and not response.is_fenced
        if not (response.is_caught_up or unfenced):
            return []
        what = "unfenced the broker" if unfenced else "answered IsCaughtUp"
        reason = (
            f"{what} although its metadata offset {body.current_metadata_offset} is below its "
            f"registration {body.broker_epoch} (not caught up)"
        )
        return [ShapeProblem(ApiKey.BROKER_HEARTBEAT, out.version, reason)]

    def _heartbeat_answer(self, out: Outgoing, response: BrokerHeartbeatResponse, t: float) -> list[Event]:
        events: list[Event] = []
        if response.error_code == ErrorCode.STALE_BROKER_EPOCH:
            self.phase = Phase.REGISTERING  # the same incarnation again: the controller keeps or gives an epoch
            self.retry_at = t
            return events
        if response.error_code != ErrorCode.NONE:
            self.failed(out, t)
            return events
        self.failures = 0
        self.heartbeats_answered += 1
        events.extend(self._caught_up_problem(out, response))
        if response.is_fenced:
            if self.phase == Phase.ACTIVE:
                events.append(FencedSeen(self.epoch, self.shutting_down, self.longest_gap_s))
            self.phase = Phase.FENCED
        elif self.phase == Phase.FENCED:
            self.phase = Phase.ACTIVE
            events.append(Unfenced(self.epoch))
            self.next_heartbeat = t + self.timing.heartbeat_s * (0.25 + 0.75 * self.phase_fraction)
            return events
        if self.phase == Phase.FENCED or self.want_shut_down:
            self.next_heartbeat = t + self.timing.fenced_heartbeat_s
        else:
            self.next_heartbeat = max(out.due, t - self.timing.heartbeat_s) + self.timing.heartbeat_s
        return events
