"""The simulated broker's behaviour as pure, seeded logic (architecture.md, "Rings").

Rules: nothing here imports trio, sockets or the time module; time is passed in as float
seconds since the fleet started, randomness as a seeded `random.Random` derived from (seed,
broker id). The shell (`broker_sim.shell`) feeds answers, listener views and faults in and
sends what the model asks for. Modules:
- `views`: what a broker's listener believes about a partition (LeaderAndIsr / StopReplica).
- `timing`: every interval and bound, derived from the heartbeat interval and session timeout.
- `versions`: which version of each API a broker uses (seeded, spread over the fleet).
- `lag`: the follower lag process (seeded episodes per replica).
- `leadership`: the leader's ISR decisions through AlterPartition and its reactions to errors.
- `requests`: request bodies for every API version the broker sends.
- `lifecycle`: DescribeCluster -> ApiVersions -> BrokerRegistration -> heartbeats -> unfenced.
- `stale`: requests built with epochs the broker knows are stale (KIP-380, KIP-497).
- `disks`: a broker's log dirs, their failures and repairs, the AlterReplicaState reports due.
- `shutdown`: a controlled shutdown in progress (ControlledShutdown and/or WantShutDown).
- `events`: what the model hands the shell (requests to send, facts to record).
- `broker`: one broker: lifecycle, data channel, disks, controlled shutdown, stale replays.
- `fleet_view`: what a leader learns of its followers, over the brokers of one fleet process.
- `schedule`: the fault schedule, a pure function of seed, scenario, broker ids and duration; and
  the controller faults of a run with its own quorum.
- `quorum`: the fleet's own controller quorum: its timeouts, its leader (DescribeQuorum), the
  failover clock, its cluster id.
"""
