"""Controller operations: pure functions from (state, request, time) to a `Result`.

None of them mutates durable state: they return records and a response, and the core replays
the records once appended. Soft state (heartbeat times) is the one exception, as in Kafka.
"""
