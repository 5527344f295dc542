"""The controller's state: managers that each own a slice, mutated only by `replay(record)`
(but the heartbeat times, soft state that operations touch, as in Kafka)."""
