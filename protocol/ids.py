"""Types that say what an int is, on the messages the controller's core reads (kio's habit).

`NewType`s: free at run time (a decoded field is a plain int), checked by mypy, so a broker id
cannot be passed where a broker epoch is wanted without saying so. Error codes stay `int` on
messages: the decoder does not turn them into `ErrorCode` members, so an `ErrorCode` type there
would be a claim the value does not keep (compare them with `ErrorCode` members, an `IntEnum`).
"""

from typing import NewType

#: A broker's node id (`node.id`); -1 means none (no leader).
BrokerId = NewType("BrokerId", int)
#: A broker incarnation's epoch: the offset of its RegisterBrokerRecord; -1 when not known.
BrokerEpoch = NewType("BrokerEpoch", int)
#: A partition's leader epoch: up by one at every leader change.
LeaderEpoch = NewType("LeaderEpoch", int)
#: A partition's epoch: up by one at every change of the partition (KIP-497's partition epoch).
PartitionEpoch = NewType("PartitionEpoch", int)
