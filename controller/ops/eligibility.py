"""Who may take over a partition from a broker that is leaving its ISR."""

from __future__ import annotations

from collections.abc import Callable

from ..state.controller_state import ControllerState
from ..state.model import PartitionRegistration


def others_eligible(state: ControllerState, part: PartitionRegistration, leaving: int) -> Callable[[int], bool]:
    """Eligible (active broker, replica online) and not the broker that is leaving."""

    def eligible(broker_id: int) -> bool:
        return broker_id != leaving and state.eligible(part, broker_id)

    return eligible
