#!/usr/bin/env bash
# make compose-smoke: build the images, run the compose stack (the controller and one fleet running
# chaos) for FLEET_SECONDS (30), then check the fleet's verdict (its exit status and its report:
# finished, no violation during the run or in the final check of the controller's log) and the
# analytics report. Not part of `make test`: it needs a container runtime and builds ~1.5 GB.
#
# Runtime: `docker compose` when a Docker daemon answers, else `podman compose`, else `podman-compose`
# (1.1 or later: profiles). BASE_IMAGE=... picks another base image (Dockerfile), e.g. a mirror's.
# It starts and ends with `down -v`: its volumes (log, captures, fleet slots) are its own.
set -euo pipefail
cd "$(dirname "$0")/.."

if docker info >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
elif command -v podman >/dev/null 2>&1 && podman compose version >/dev/null 2>&1; then
    compose=(podman compose)
elif command -v podman-compose >/dev/null 2>&1; then
    compose=(podman-compose)
else
    echo "compose-smoke: no Docker daemon with compose, no podman compose, no podman-compose" >&2
    exit 2
fi
export FLEET_SECONDS="${FLEET_SECONDS:-30}"
newest_report='cat "$(ls -d /var/lib/fencer/fleet/slot-* | sort -t- -k2 -n | tail -n 1)/run.json"'
echo "compose-smoke: ${compose[*]}, fleet for ${FLEET_SECONDS} s, base image ${BASE_IMAGE:-python:3.11-slim-bookworm}"

cleanup() { "${compose[@]}" --profile analytics down -v >/dev/null 2>&1 || true; }
trap cleanup EXIT
cleanup
mkdir -p compose-output
chmod a+rwx compose-output # the analytics job writes there as uid 10001 (Dockerfile)
"${compose[@]}" --profile analytics build

# The fleet's exit status is its verdict (0: finished, no violation); when it exits, compose stops
# the controller (SIGTERM: it drains).
status=0
"${compose[@]}" up --exit-code-from fleet controller fleet || status=$?
echo "compose-smoke: the fleet exited ${status}"

# the newest slot's report: slots only grow, and volumes left by an earlier run may hold older ones
"${compose[@]}" run --rm --no-deps --entrypoint sh fleet -c "$newest_report" >compose-output/fleet-report.json
# the report's exit status is the verdict's (broker_sim/report.py): it counts the final check's findings
verdict=0
python3 -c '
import json, sys
report = json.load(open(sys.argv[1]))
outcome, check = report["outcome"], report["check"]
found = None if check is None else {"violations": check["violations"], "problems": check["problems"]}
print("compose-smoke: fleet report: exit status", outcome["exit_status"], "finished", outcome["finished"],
      "final check", found)
sys.exit(0 if outcome["exit_status"] == 0 and check is not None else 1)
' compose-output/fleet-report.json || verdict=$?

"${compose[@]}" --profile analytics run --rm analytics
test -s compose-output/analytics/report.html
echo "compose-smoke: report: compose-output/analytics/report.html"
if [ "$status" -ne 0 ] || [ "$verdict" -ne 0 ]; then
    echo "compose-smoke: FAILED (fleet exit status ${status}, report verdict ${verdict})" >&2
    exit 1
fi
echo "compose-smoke: passed"
