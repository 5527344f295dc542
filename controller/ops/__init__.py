"""Controller operations: pure functions from (state, request, time) to an `Outcome`.

An `Outcome` is a `Result` (one atomic batch of records and the response) or `Steps` (the
batches of an operation decided in steps, then its response; see `ops.batches`). None of them
mutates durable state: the caller (`controller.engine`) replays their records as soon as they
are decided and appends them afterwards. Soft state (heartbeat times) is the one exception,
as in Kafka.
"""
