"""The outbound control channel: orders derived from replay (`orders`), the LeaderAndIsr and
StopReplica builders (`requests`), a connection per broker (`links`) and the channel that feeds them
(`channel`, with its results in `outcomes`)."""
