"""Replay of the Kafka 3.9 record types the state does not act on yet (issue 18's first part):
they are read and ignored, except an aborted metadata transaction, which is refused."""

from __future__ import annotations

import pytest

from controller.core import ControllerCore
from controller.state.cluster import ReplayError
from protocol.records.control import CONTROL_RECORD_TYPES
from protocol.records.metadata import METADATA_RECORD_TYPES, AbortTransactionRecord
from tests.controller.harness import Harness

ACTED_ON = {
    "RegisterBrokerRecord",
    "UnregisterBrokerRecord",
    "TopicRecord",
    "PartitionRecord",
    "PartitionChangeRecord",
    "FenceBrokerRecord",
    "UnfenceBrokerRecord",
    "RemoveTopicRecord",
    "BrokerRegistrationChangeRecord",
    "LeaderChangeMessage",
}
IGNORED = [
    cls
    for cls in (*METADATA_RECORD_TYPES.values(), *CONTROL_RECORD_TYPES.values())
    if cls.__name__ not in ACTED_ON and cls is not AbortTransactionRecord
]


@pytest.mark.parametrize("cls", IGNORED, ids=lambda cls: cls.__name__)
def test_record_types_the_state_does_not_act_on_are_ignored(cls: type) -> None:
    core: ControllerCore = Harness().core
    counts = core.counts()._replace(last_offset=41) if "last_offset" in core.counts()._fields else core.counts()
    assert core.replay(cls(), 41) is None
    assert core.state.last_offset == 41
    assert core.counts() == counts


def test_an_aborted_metadata_transaction_is_refused() -> None:
    with pytest.raises(ReplayError, match="AbortTransactionRecord"):
        Harness().core.replay(AbortTransactionRecord(reason="x"), 1)
