"""What one simulated broker holds (`BrokerState`): the state that its channels, its stale replays
and its request probes share, set up once per broker, with the epoch and the topic-id lookups they
all read. Behaviour is added by the parts built on it (`broker_replays`, `broker_request_probes`)
and by `broker.BrokerModel`, which joins them; keeping the state here gives each part one
definition of every attribute.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from dataclasses import replace

from protocol.spec import ZERO_UUID

from . import request_probes, stale
from .disks import Disks
from .events import Event
from .leadership import Followers, Leadership
from .lifecycle import Lifecycle
from .requests import Proposal
from .shutdown import Shutdown
from .timing import Timing
from .views import PartitionView

Views = Mapping[tuple[str, int], PartitionView]


class BrokerState:
    """What one simulated broker holds (see the module rules)."""

    def __init__(
        self,
        broker_id: int,
        seed: int,
        timing: Timing,
        followers: Followers,
        topic_ids: Mapping[str, uuid.UUID],
        *,
        stale_replays: bool = False,
        probe_gap_s: float = request_probes.PROBE_GAP_S,
    ) -> None:
        self.broker_id = broker_id
        self.seed = seed
        self.timing = timing
        self.followers = followers
        self.topic_ids = topic_ids
        self.rng = random.Random(f"{seed}:{broker_id}")
        log_dirs = tuple(uuid.UUID(int=self.rng.getrandbits(128)) for _ in range(2))
        self.disks = Disks(log_dirs, timing.catch_up_s)
        self.phase = random.Random(f"{seed}:{broker_id}:phase").random()
        self.lifecycle = Lifecycle(broker_id, seed, timing, log_dirs, self.phase)
        self.leadership = Leadership(broker_id, timing)
        self.events: list[Event] = []
        self.views: Views = {}
        self.incarnations = 0
        self.paused_until = self.resumed_at = self.paused_at = 0.0
        self.ready_at = 0.0  # a restarted broker's replicas are caught up from then on
        self.shutdown: Shutdown | None = None
        self.incarnation_over = False
        self.replays = stale.Replays(stale_replays, self.rng)
        self.request_probes = request_probes.RequestProbes(stale_replays, seed, broker_id, probe_gap_s)
        self.next_tick = 0.0
        self.data_in_flight = False
        self._views_version = -1
        self.heard_at: float | None = None  # see `broker_request_probes`
        self.dirs_failed: set[int] = set()  # dirs failed in this incarnation
        self.reported_offline: set[tuple[str, int]] = set()  # OFFLINE answered NONE, not repaired

    @property
    def epoch(self) -> int:
        return self.lifecycle.epoch

    def _with_topic_ids(self, proposals: list[Proposal]) -> list[Proposal]:
        """Proposals with their topic ids (views from LeaderAndIsr v0-4 have none); the others wait."""
        ready = []
        for proposal in proposals:
            topic_id = proposal.topic_id if proposal.topic_id != ZERO_UUID else self.topic_ids.get(proposal.topic)
            if topic_id is None:
                self.leadership.failed([proposal], self.next_tick)
            else:
                ready.append(replace(proposal, topic_id=topic_id))
        return ready

    def _topic_id(self, view: PartitionView) -> uuid.UUID:
        return view.topic_id if view.topic_id != ZERO_UUID else self.topic_ids.get(view.topic_name, ZERO_UUID)
