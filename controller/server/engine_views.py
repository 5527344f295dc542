"""What the shell reads of the engine: the views the HTTP server, the metrics and the /state
document take instead of the engine (`controller.engine.ControllerEngine`) or its core.

Rules:
- The shell reads the engine through its methods, never through its core: `ControllerEngine`
  has every method of these Protocols (each delegates to its core or its log), so the daemon
  gives the engine itself; a test may give anything else that has them.
- A reader takes a provider and calls it at each use (a request, a scrape); None means there is
  no engine yet (the daemon is starting): /state and /healthz answer 503 "starting", and the
  metrics read from it export their families without a sample.
- `StateView.freeze()` is called on the thread that replays (the event loop), so that the copy
  is one consistent state; the copy may then be read anywhere (a worker thread builds /state).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..core import ClusterCounts
from ..log import LogSizes
from ..state.frozen import FrozenState
from ..state.replication import IsrChanges


class StateView(Protocol):
    """The engine's state as the shell reads it: a frozen copy (/state) and its counts (the cluster gauges)."""

    def freeze(self) -> FrozenState: ...
    def counts(self) -> ClusterCounts: ...


class CommittedView(Protocol):
    """What the engine made durable, as the metrics read it at each scrape."""

    def committed_isr_changes(self) -> IsrChanges: ...
    def log_sizes(self) -> LogSizes: ...


StateProvider = Callable[[], StateView | None]
CommittedProvider = Callable[[], CommittedView | None]
