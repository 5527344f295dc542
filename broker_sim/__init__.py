"""The broker simulator: a fleet of simulated Kafka brokers that drive and check the controller.

Rules: `broker_sim` imports `protocol`, never `controller` (the checker must judge any controller
that writes Kafka's format). The broker's behaviour is pure, seeded logic with time passed in
(`model/`); trio appears only in the shell (the fleet runner, connections, the listener, the
display). Every random choice comes from a seeded `random.Random`. Modules:
- `model/` (pure): one broker's lifecycle, replicas and lag, ISR decisions, reactions to errors,
  disks, controlled shutdown, stale replays and probes, version choices and the fault schedule;
  `quorum`: the fleet's own controller quorum (timeouts, its leader, the failover clock).
- `shell/` (trio): `fleet` (the fleet engine, `run_fleet(FleetConfig, FleetStats) -> FleetOutcome`),
  `runner` (one fleet process: its brokers, the fault driver, the admin client, the ticker),
  `broker` and `connection` (a broker's incarnations and its controller connections), `listener`
  (the broker side of the control plane: ApiVersions, LeaderAndIsr, StopReplica, enforcing the
  broker-side epoch rules of semantics.md), `faults`, `admin`, `capture`, `recorder`; `run` (a
  run from start to verdict), `processes` (`--processes K`), `claims` (`--claim-broker-ids`),
  `display` (the live view and the summary); `quorum`, `proxy` and `quorum_faults` (`--quorum N`:
  the fleet's own controllers, the TCP proxies between them, their faults and failovers).
- `journal`: the run's journal (JSON lines), the contract between the fleet and the checker.
- `stats`: live counters for the display and the report, mergeable across fleet processes.
- `report`: the verdict, exit status, final check and JSON report.
- `check/`: the invariant checker (the metadata log read with `protocol`, plus the journal).
- `cli` (and `__main__`): the command line, `python -m broker_sim run|check` and `fencer-fleet`;
  `demo`: `make demo`.
"""
