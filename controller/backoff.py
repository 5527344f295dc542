"""The controller's one retry backoff: exponential, capped (Kafka's `ExponentialBackoff` with
multiplier 2, as `reconnect.backoff.ms` / `reconnect.backoff.max.ms` use it).

Rules:
- After `failures` consecutive failures the delay is `initial * 2 ** (failures - 1)`, at most
  `maximum`: 1 failure waits `initial`; 0 failures (nothing failed yet) waits `initial` as well.
- Jitter is the caller's, from its own seeded generator (a simulation replays a seed exactly),
  applied to the delay this returns.
"""

from __future__ import annotations

#: past this many doublings the cap has long been reached (keeps the power finite)
_MAX_DOUBLINGS = 62


def exponential_backoff(initial: float, maximum: float, failures: int) -> float:
    """The delay (in the unit of `initial` and `maximum`) after `failures` consecutive failures."""
    return min(maximum, initial * 2.0 ** min(max(failures - 1, 0), _MAX_DOUBLINGS))
