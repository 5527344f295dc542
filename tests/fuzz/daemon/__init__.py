"""The daemon fuzzer's parts (its command line: tests/fuzz/fuzz_daemon.py).

- `context`: the fuzzed node's current values, from its `/state` (ids, epochs, offsets, topics).
- `templates`: per API the daemon serves, a valid request that reaches its handler.
- `values`: hostile values put into a template, chosen by field name and wire type.
- `frames`: a frame to send: a template, made hostile, or its bytes mutated; with its summary.
- `setups`: the four set-ups of real daemons, and how each deployment is prepared.
- `client`: the fuzzer's connection (answer, close or stall) and the bystander broker's thread.
- `observe`: what a refused request must not change (`/state`, DescribeQuorum, quorum-state).
- `checks`: refused or accepted, findings and their symptoms, the daemons' stderr.
- `runner`: the loop of one set-up, settling, restarts, the result.
"""
