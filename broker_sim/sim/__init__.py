"""The deterministic whole-cluster simulator: many trio programs in one `trio.run` on a mock clock."""
