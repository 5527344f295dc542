"""The broker simulator: a fleet of simulated Kafka brokers that drive and check the controller.

Rules: this package is a shell (architecture.md "Rings"): it may import trio and `protocol`, and
speaks to the controller only over the wire. Every random choice comes from a seeded
`random.Random`. Modules:
- `listener`: the broker side of the control plane (ApiVersions, LeaderAndIsr, StopReplica),
  enforcing the broker-side epoch rules of semantics.md.
"""
