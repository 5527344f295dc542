# fencer: one entry point for every routine task.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_SECONDS ?= 60

.PHONY: demo docs test lint typecheck pytest analyze bench-analytics bench bench-fleet bench-core bench-log bench-daemon bench-failover bench-scale stress fsync-check fuzz fuzz-daemon soak bench-stalls check-kafka-dirs compose-smoke mutation-fleet mutation-sim sim report-screenshot clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH (or run: make PYTHON=python3 ...)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## demo: the controller, DEMO_SECONDS (default 60) of the fleet's chaos scenario with the live display, the invariant check; everything under ./demo-output/
demo: $(STAMP)
	$(BIN)/python -m broker_sim.demo --seconds $(DEMO_SECONDS) --output demo-output$(if $(QUORUM), --quorum $(QUORUM))

## test: lint, type-check, build the docs (warnings are errors) and run the whole test suite (creates .venv on first use)
test: $(STAMP) lint typecheck docs pytest

## docs: the documentation site (MkDocs, mkdocs.yml) into site/; a warning (a broken link or anchor, a page left out of the navigation) fails it
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir site

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy protocol controller broker_sim analytics docgen

# PYTEST_WORKERS processes (pytest-xdist): most of the suite's time is spent waiting on real daemons,
# fleets and timers, so more workers than cores; tests that share a costly fixture share a worker
# (tests/conftest.py). The slowest tests are printed at the end. (8 workers, tried 2026-11-26: slower,
# 9:55 against 8:41 for a clean clone, the extra contention costing more CPU than the idle time won.)
# Bytecode caches on, whatever PYTHONDONTWRITEBYTECODE says: the suite starts a few hundred Python
# processes (daemons, fleets, command lines), and without caches each compiles fencer's modules
# again (about 0.25 CPU s a start); they are compiled once up front (about 1 s), and the workers'
# assertion-rewritten test modules are cached as they go.
PYTEST_WORKERS ?= 6
pytest: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m compileall -q protocol controller broker_sim analytics tests benchmarks examples >/dev/null
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --durations=15

## report-screenshot: the top of a report in headless Chromium (Debian's chromium): make report-screenshot [REPORT=path]
REPORT ?= demo-output/analysis/report.html
report-screenshot:
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1400 \
		--screenshot=docs/report-screenshot.png "file://$(abspath $(REPORT))"

## analyze: the Spark job over capture dirs: make analyze CAPTURE="dir [dir ...]" [OUT=dir] (needs Java 17)
OUT ?= analytics-out
analyze: $(STAMP)
	@test -n "$(CAPTURE)" || { echo 'usage: make analyze CAPTURE="dir [dir ...]" [OUT=dir]'; exit 2; }
	$(BIN)/python -m analytics $(CAPTURE) --out $(OUT)

## bench-fleet: 1,000 simulated brokers in one process, chaos, 120 s, against the daemon with fsync on
bench-fleet: $(STAMP)
	$(BIN)/python benchmarks/fleet.py

## bench-analytics: python -m analytics as shipped, over a generated capture of 5,000,000 exchanges, against one plain Python process (medians of 3)
bench-analytics: $(STAMP)
	$(BIN)/python benchmarks/analytics.py --exchanges 5000000 --rounds 3

## bench: codec benchmark (prints ratios against kio 0.5.0 and a hand-written decoder)
bench: $(STAMP)
	$(BIN)/python benchmarks/codec.py

## bench-core: controller core benchmark (decisions, replay, start-up, controlled shutdown)
bench-core: $(STAMP)
	$(BIN)/python benchmarks/core.py

## bench-log: metadata log benchmark (durable appends, recovery and read speed)
bench-log: $(STAMP)
	$(BIN)/python benchmarks/log.py

## bench-daemon: the daemon under 100 connections, against an echo server, with and without capture, and over TLS with client certificates
bench-daemon: $(STAMP)
	$(BIN)/python benchmarks/daemon.py --tls

## bench-failover: the leader of a 3-voter quorum SIGKILLed 20 times under a steady fleet (p50/p99 of new leader elected and brokers served again); AlterPartition on 3 voters against a single node
bench-failover: $(STAMP)
	$(BIN)/python benchmarks/failover.py --kills 20

## stress: SIGKILL the daemon under load, 20 rounds (also mid-snapshot, -topic change, -registration, -start-up); nothing acknowledged may be lost
stress: $(STAMP)
	$(BIN)/python tests/stress/kill9.py --rounds 20

## fsync-check: the daemon under strace and load for 10 s; no answer may leave before its log records are fsync'd
fsync-check: $(STAMP)
	$(BIN)/python tests/stress/fsync_order.py --seconds 10

## bench-scale: the daemon restarted on a snapshot of 1,000,000 partitions plus a 100,000-record tail (3 rounds): seconds to listening, each phase, RSS per partition
bench-scale: $(STAMP)
	$(BIN)/python benchmarks/scale.py --topics 100 --partitions-per-topic 10000 --tail 100000 --rounds 3

## bench-stalls: how long a bystander waits while the daemon creates 10 x 9,999 partitions, snapshots them and serves /state
bench-stalls: $(STAMP)
	$(BIN)/python benchmarks/stalls.py --topics 10

## soak: 10 minutes of mixed load; fails if memory, descriptors or data-dir size grow by more than 10% after minute 2
soak: $(STAMP)
	$(BIN)/python benchmarks/soak.py --minutes 10

## fuzz: 1,000,000 random/mutated frames through the decoder; reports escapes
fuzz: $(STAMP)
	$(BIN)/python tests/fuzz/fuzz_decode.py --cases 1000000

## fuzz-daemon: 1,000,000 valid frames with hostile values (and their bytes mutated) against the real daemon in four set-ups (single, tls, quorum leader, quorum follower), two at a time; reports exits, tracebacks, changes after refused requests, stalls, a bystander broker's heartbeat latency; findings in fuzz-daemon-out/ (about 75 minutes on 2 cores)
fuzz-daemon: $(STAMP)
	$(BIN)/python tests/fuzz/fuzz_daemon.py --frames 1000000

## check-kafka-dirs: fencer adopts KRaft data dirs Apache Kafka wrote: make check-kafka-dirs KAFKA_DIRS="DIR [DIR ...]" (each on a copy: dump-log, the invariant check, /state against the log, its brokers back as new incarnations, the check again)
check-kafka-dirs: $(STAMP)
	@test -n "$(KAFKA_DIRS)" || { echo 'usage: make check-kafka-dirs KAFKA_DIRS="DIR [DIR ...]"'; exit 2; }
	$(BIN)/python tests/kafka_dirs/adopt.py $(KAFKA_DIRS)

## compose-smoke: build the image, run the compose stack (controller + chaos fleet) for 30 s, check the fleet's verdict and the analytics report; docker if its daemon answers, else podman (not part of make test)
compose-smoke:
	deploy/compose-smoke.sh

## mutation-fleet: cosmic-ray's mutants of controller/ops, state and control, each against a short chaos fleet run (seed 1, then 2 if clean), on a copy of HEAD: make mutation-fleet [SAMPLE=N|all] [SEED=S] [MUTATION_OUT=dir]; prints the score, writes MUTATION_OUT/summary.md and summary.json (not part of make test; the default sample takes about 50 min on 2 cores)
SAMPLE ?= 100
SEED ?= 1
MUTATION_OUT ?= mutation-out
mutation-fleet: $(STAMP)
	$(BIN)/python benchmarks/mutation_fleet.py run --sample $(SAMPLE) --seed $(SEED) --out $(MUTATION_OUT)

## mutation-sim: the same mutants as mutation-fleet (same SAMPLE and SEED), each judged by the simulator (python -m broker_sim sim: SIM_SEEDS seeds of the fleet's broker-fault scenarios and failovers in turn, up to the first that fails): make mutation-sim [SAMPLE=N|all] [SEED=S] [SIM_SEEDS=K] [MUTATION_OUT=dir] (not part of make test)
SIM_SEEDS ?= 8
mutation-sim: $(STAMP)
	$(BIN)/python benchmarks/mutation_fleet.py run --judge sim --sim-seeds $(SIM_SEEDS) --sample $(SAMPLE) --seed $(SEED) --out $(if $(filter mutation-out,$(MUTATION_OUT)),mutation-sim-out,$(MUTATION_OUT))

## sim: the whole cluster under deterministic simulation: make sim [SEEDS=N] [FIRST_SEED=S] [SCENARIO=name[,name]] (default: every scenario in turn); exit 0 when every seed is clean
SEEDS ?= 20
FIRST_SEED ?= 0
SCENARIO ?=
sim: $(STAMP)
	$(BIN)/python -m broker_sim sim --seeds $(SEEDS) --first-seed $(FIRST_SEED)$(if $(SCENARIO), --scenario $(SCENARIO))

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache .hypothesis demo-output fuzz-daemon-out
