"""controller: the fencer daemon: core state machine, metadata log, trio shell, control channel, capture and metrics."""
