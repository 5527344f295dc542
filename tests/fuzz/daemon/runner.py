"""The fuzzing loop of one set-up: frames, the checks after each, findings, restarts.

For each frame: build it from the current context (`frames.make_frame`), exchange it
(`client.FuzzConnection`), look at every daemon of the deployment (alive? a new traceback?),
judge the reaction (`checks.judge`), observe the fuzzed node (`observe.Observer`), compare with
the observation before the frame, and collect the bystander's failures. Findings are printed
(the first of each symptom in full) and written as JSON lines as they happen.

Changes that happen by themselves are kept out by design, not by a looser check:
- the observation before a frame is the one after the previous frame, taken only once the
  deployment had *settled* after anything that changed: two equal observations in a row, the
  fuzzed node still in its role with an active controller, and in a quorum every voter caught up
  with the leader's log end (the leader's DescribeQuorum, and the fuzzed follower's own log end);
- a deployment that does not settle within `SETTLE_SECONDS`, whose fuzzed node changed roles, or
  one of whose daemons died, is stopped and started afresh (each a finding: no frame of a client
  that is not a voter should move a node out of its role), as it is every `--restart-every` frames
  anyway: that keeps its state small (observations cheap) and every broker session far from expiry;
- a refused request's change is read once more before it is reported, and reported with both.
A bystander heartbeat answered with an error (NOT_CONTROLLER while an accepted request's election
runs) is counted, not a finding: it was answered. Not answered within `client.HEARTBEAT_DEADLINE`, or closed, is.
"""

from __future__ import annotations

import collections
import json
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .checks import Finding, StderrWatcher, judge, traceback_summary
from .client import HEARTBEAT_DEADLINE, FuzzConnection
from .context import Context, context_from
from .frames import Frame, api_name, make_frame
from .observe import Observation, Observer, QuorumDescriber, describe_quorum_view, differences, read_state
from .setups import BYSTANDER_ID, Certificates, Deployment, start

SETTLE_SECONDS = 10.0
#: how long the fuzzed node may stay in another role before settling gives up on it
ROLE_SECONDS = 3.0
COUNTERS = (
    "frames", "answered", "closed", "stalls", "unreachable", "refused", "accepted", "exits", "tracebacks",
    "refused_changes", "closed_unanswered", "garbled", "bystander_failures", "restarts", "role_changes", "unsettled",
)  # fmt: skip


@dataclass
class SetupResult:
    setup: str
    seed: int
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    latencies: list[float] = field(default_factory=list)  # the bystander's heartbeats, seconds
    bystander_errors: dict[str, int] = field(default_factory=dict)  # heartbeats answered with an error
    seconds: float = 0.0  # fuzzing time, start-ups and stops excluded
    wall_seconds: float = 0.0
    symptoms: dict[str, Finding] = field(default_factory=dict)  # the first finding of each
    #: well-formed requests closed unanswered, by "API vN" (not findings: see checks)
    closed_by_api: dict[str, int] = field(default_factory=dict)
    findings: int = 0

    def percentile(self, share: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else 0.0


@dataclass
class Session:
    """One deployment being fuzzed, and what the run holds open on it."""

    deployment: Deployment
    observer: Observer
    describer: QuorumDescriber  # the leader's DescribeQuorum (settling)
    watchers: dict[int, StderrWatcher]
    connection: FuzzConnection
    exited: set[int] = field(default_factory=set)  # nodes whose exit was reported
    last_seen: Observation | None = None  # the last observation while settling

    def close(self) -> None:
        self.connection.close()
        self.observer.close()
        self.describer.close()


class SetupRun:
    def __init__(
        self,
        setup: str,
        frames: int,
        seed: int,
        *,
        work: Path | None = None,
        findings_file: Path | None = None,
        restart_every: int = 5000,
        progress_every: int = 0,
        quiet: bool = False,
    ) -> None:
        self.setup, self.total, self.seed = setup, frames, seed
        self.work = work
        self.findings_file = findings_file
        self.restart_every = restart_every
        self.progress_every = progress_every
        self.quiet = quiet
        self.rng = random.Random(f"{seed}:{setup}")
        self.result = SetupResult(setup, seed)
        self.recent: collections.deque[tuple[float, int, Frame]] = collections.deque(maxlen=256)
        self._out: IO[str] | None = None
        self._context_of: dict[str, Any] | None = None  # the /state document `_current` was made of
        self._current: Context | None = None
        #: when the frame that killed a daemon of the deployment was sent (inf: none died)
        self._dead_since = float("inf")

    # ------------------------------------------------------------------ the whole run
    def run(self, replayed: Frame | None = None) -> SetupResult:
        """Fuzz `frames` frames (or send the one `replayed` frame), restarting deployments as needed."""
        began = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"fuzz-{self.setup}-", dir=self.work) as tmp:
            root = Path(tmp)
            certificates = Certificates(root / "pki") if self.setup != "single" else None
            if self.findings_file is not None:
                self._out = open(self.findings_file, "a")  # noqa: SIM115 - closed below
            try:
                index, number = 0, 0
                while index < self.total:
                    number += 1
                    deployment = start(self.setup, root / f"deployment-{number}", certificates, self.rng)
                    try:
                        end = min(self.total, index + self.restart_every)
                        index = self._fuzz(deployment, index, end, replayed)
                    finally:
                        self._stop(deployment, index)
                    if index < self.total:
                        self.result.counts["restarts"] += 1
            finally:
                if self._out is not None:
                    self._out.close()
        self.result.wall_seconds = time.monotonic() - began
        return self.result

    def replay(self, frame: Frame) -> SetupResult:
        self.total = 1
        return self.run(replayed=frame)

    def _stop(self, deployment: Deployment, index: int) -> None:
        if deployment.bystander is not None:
            deployment.bystander.stop()
            self.result.latencies += deployment.bystander.latencies
            self._bystander(deployment)
        alive = {
            node for node, process in deployment.nodes.items() if process.process and process.process.poll() is None
        }
        for node, code in deployment.stop().items():
            if node in alive and code != 0:
                stderr = deployment.nodes[node].stderr()[-3000:]
                self._finding(index - 1, None, "unclean-stop", f"node {node}: SIGTERM gave exit code {code}", stderr)
        deployment.remove()

    # ------------------------------------------------------------------ one deployment
    def _fuzz(self, deployment: Deployment, index: int, end: int, replayed: Frame | None = None) -> int:
        describer = QuorumDescriber(deployment.nodes[deployment.leader].port, deployment.tls)
        session = Session(
            deployment,
            Observer(
                deployment.metrics_ports[deployment.fuzzed],
                deployment.target.data_dir,
                describer if deployment.fuzzed == deployment.leader else None,
            ),
            describer,
            {node: StderrWatcher(process.log_file) for node, process in deployment.nodes.items()},
            FuzzConnection(deployment.target.port, deployment.identities, self.rng),
        )
        frame: Frame | None = None
        self._dead_since = float("inf")
        try:
            baseline, reason = self._settle(session, None)
            if baseline is None:
                raise RuntimeError(f"{deployment.setup}: a fresh deployment did not settle ({reason})")
            started = time.monotonic()
            while index < end and baseline is not None:
                context = self._context(session)
                frame = replayed or make_frame(context, self.rng, correlation_id=(index + 1) & 0x7FFFFFFF)
                self.recent.append((time.monotonic(), index, frame))
                baseline = self._one(session, frame, index, baseline)
                index += 1
                self.result.counts["frames"] += 1
                self._progress(index, started)
            self.result.seconds += time.monotonic() - started
            return index
        finally:
            if frame is not None:  # what happened after the last frame is its doing
                self._daemons(session, index - 1, frame)
            session.close()

    def _context(self, session: Session) -> Context:
        document = session.observer.document
        if self._context_of is not document:  # else nothing changed since the last frame
            self._context_of = document
            deployment = session.deployment
            self._current = context_from(
                document, deployment.target.data_dir, bystander_id=BYSTANDER_ID, dead_port=deployment.dead_port
            )
        assert self._current is not None
        return self._current

    def _one(self, session: Session, frame: Frame, index: int, baseline: Observation) -> Observation | None:
        """Send one frame and check everything; the new baseline, or None to restart the deployment."""
        counts = self.result.counts
        outcome = session.connection.exchange(frame)
        counts[{"answered": "answered", "closed": "closed", "stall": "stalls"}.get(outcome.kind, "unreachable")] += 1
        alive, logged = self._daemons(session, index, frame)
        verdict = judge(frame, outcome.kind, outcome.payload)
        if verdict.refused is not None:
            counts["refused" if verdict.refused else "accepted"] += 1
        if outcome.kind == "closed" and frame.well_formed:
            counts["closed_unanswered"] += 1
            label = f"{api_name(frame.api_key)} v{frame.version}"
            self.result.closed_by_api[label] = self.result.closed_by_api.get(label, 0) + 1
        if verdict.problem is not None and (alive or verdict.problem[0] != "unreachable"):
            what, detail = verdict.problem
            counts["garbled"] += what == "garbled-answer"
            self._finding(index, frame, what, f"{detail} (as {session.connection.identity})", logged)
        if not alive:
            return None
        after = self._observe(session)
        if after is not None and after == baseline:
            self._bystander(session.deployment)
            return baseline
        if verdict.refused and after is not None:
            again = self._observe(session) or after
            changed = differences(baseline, again) or [f"(transient) {line}" for line in differences(baseline, after)]
            self._refused_change(index, frame, changed, logged)
        settled, reason = self._settle(session, after)
        if verdict.refused and after is None and settled is not None and settled != baseline:
            self._refused_change(index, frame, differences(baseline, settled), logged)
        self._bystander(session.deployment)
        if settled is None:
            alive, _ = self._daemons(session, index, frame)
            if alive and reason == "unresponsive":
                self._finding(index, frame, "unresponsive", "/state or DescribeQuorum unanswered for 10 s", logged)
            if alive and reason == "role" and session.last_seen is not None:
                self._finding(index, frame, "role-change", self._role_change(session, verdict.refused), logged)
            if alive and reason == "unsettled":
                detail = f"still moving, or a voter behind the leader, {SETTLE_SECONDS:.0f} s after the frame"
                self._finding(index, frame, "unsettled", detail, logged)
            counts["role_changes" if reason == "role" else "unsettled"] += reason != "exit"
        return settled

    def _role_change(self, session: Session, refused: bool | None) -> str:
        deployment = session.deployment
        assert session.last_seen is not None
        quorum = session.last_seen["state"]["quorum"]
        was = "leader" if deployment.fuzzed == deployment.leader else f"follower of node {deployment.leader}"
        now = f"{quorum['state']} in epoch {quorum['epoch']}, leader {quorum['leader_id']}"
        how = {True: "a refused", False: "an accepted", None: "a stalled"}[refused]
        return f"after {how} request, node {deployment.fuzzed} ({was}) is {now}"

    def _refused_change(self, index: int, frame: Frame, changed: list[str], logged: str) -> None:
        self.result.counts["refused_changes"] += 1
        self._finding(index, frame, "refused-change", "; ".join(changed), logged)

    # ------------------------------------------------------------------ checks
    def _daemons(self, session: Session, index: int, frame: Frame) -> tuple[bool, str]:
        """(every daemon alive, what they logged since the last look); findings for exits and tracebacks."""
        alive, logged = True, []
        nodes = session.deployment.nodes
        for node, process in nodes.items():
            watcher = session.watchers[node]
            text = watcher.new_text()
            assert process.process is not None
            code = process.process.poll()
            if code is not None or "Traceback" in text:
                time.sleep(0.1)  # the rest of a traceback, a dying daemon's last words
                text += watcher.new_text()
            if text:
                logged.append(f"[node {node}]\n{text}" if len(nodes) > 1 else text)
            if "Traceback" in text:
                self.result.counts["tracebacks"] += 1
                self._finding(index, frame, "traceback", f"node {node}: {traceback_summary(text)}", text[-3000:])
            if code is not None:
                alive = False
                if node in session.exited:
                    continue
                session.exited.add(node)
                self._dead_since = min(self._dead_since, self.recent[-1][0] if self.recent else 0.0)
                self.result.counts["exits"] += 1
                summary = traceback_summary(watcher.tail)
                detail = f"node {node} exited with code {code}" + (f" after {summary}" if summary else "")
                self._finding(index, frame, "exit", detail, watcher.tail[-3000:])
        return alive, "".join(logged)[-3000:]

    def _observe(self, session: Session) -> Observation | None:
        try:
            return session.observer.observe()
        except (OSError, ValueError, KeyError):
            return None

    def _bystander(self, deployment: Deployment) -> None:
        bystander = deployment.bystander
        if bystander is None:
            return
        while bystander.failures:
            sent, what = bystander.failures.pop(0)
            if what.startswith("answered "):  # answered, with an error: counted
                name = what.removeprefix("answered ")
                self.result.bystander_errors[name] = self.result.bystander_errors.get(name, 0) + 1
                continue
            self.result.counts["bystander_failures"] += 1
            if sent + HEARTBEAT_DEADLINE >= self._dead_since:
                continue  # a daemon died: that was the finding
            culprit = next(((i, f) for t, i, f in reversed(self.recent) if t <= sent), None)
            if culprit is None and self.recent:
                culprit = self.recent[0][1:]
            index, frame = culprit if culprit is not None else (-1, None)
            self._finding(index, frame, "bystander", f"heartbeat {what}", "")

    def _settle(self, session: Session, first: Observation | None) -> tuple[Observation | None, str]:
        """The observation once the deployment stands still and healthy, or (None, why not):
        "role" (the fuzzed node changed roles), "exit", "unresponsive" or "unsettled"."""
        deadline = time.monotonic() + SETTLE_SECONDS
        previous, why, other_role_since = first, "unresponsive", float("inf")
        pause = 0.005
        while time.monotonic() < deadline:
            time.sleep(pause)
            if any(p.process is not None and p.process.poll() is not None for p in session.deployment.nodes.values()):
                return None, "exit"
            current = self._observe(session)
            if current is None:
                previous, why = None, "unresponsive"
                continue
            session.last_seen = current
            try:
                why = self._unhealthy(session, current)
            except (OSError, ValueError, KeyError, IndexError):
                why = "unsettled"
            if current == previous and not why:
                return current, ""
            # in another role for 3 s (a new leader elected, or none for that long): done waiting
            other_role_since = min(other_role_since, time.monotonic()) if why == "role" else float("inf")
            if time.monotonic() - other_role_since > ROLE_SECONDS:
                return None, "role"
            previous = current
        return None, why or "unsettled"

    def _unhealthy(self, session: Session, current: Observation) -> str:
        deployment = session.deployment
        quorum = current["state"]["quorum"]
        role = "leader" if deployment.fuzzed == deployment.leader else "follower"
        if quorum["state"] != role or quorum["leader_id"] != deployment.leader:
            return "role"
        if len(deployment.nodes) == 1:
            return "" if quorum["active_controller"] else "unsettled"
        leader_state = current["state"] if role == "leader" else read_state(deployment.metrics_ports[deployment.leader])
        leader_end = leader_state["quorum"]["log_end_offset"]
        # everything committed, and the fuzzed node (a follower: it learns the high watermark from
        # its next fetch, and replays up to it) holding and having replayed all of it
        if leader_state["quorum"]["high_watermark"] != leader_end or (
            quorum["log_end_offset"],
            quorum["high_watermark"],
            current["state"]["last_applied_offset"],
        ) != (leader_end, leader_end, leader_state["last_applied_offset"]):
            return "unsettled"
        # the leader's DescribeQuorum: the observation's own when the fuzzed node leads (one read)
        view = current.get("describe_quorum") or describe_quorum_view(session.describer.describe())
        partition = view["__cluster_metadata-0"]
        caught_up = all(end == leader_end for _, _, end in partition["voters"])
        return "" if caught_up and partition["high_watermark"] == leader_end else "unsettled"

    # ------------------------------------------------------------------ reporting
    def _finding(self, index: int, frame: Frame | None, what: str, detail: str, stderr: str) -> None:
        finding = Finding(
            setup=self.setup,
            seed=self.seed,
            frame=index,
            hex=frame.data.hex() if frame is not None else "",
            summary=frame.summary if frame is not None else "",
            what=what,
            detail=detail,
            stderr_tail=stderr,
        )
        self.result.findings += 1
        if self._out is not None:
            self._out.write(json.dumps(finding.as_json()) + "\n")
            self._out.flush()
        if finding.symptom in self.result.symptoms:
            return
        self.result.symptoms[finding.symptom] = finding
        if not self.quiet:
            print(render(finding), flush=True)

    def _progress(self, index: int, started: float) -> None:
        if self.progress_every and index % self.progress_every == 0:
            rate = self.result.counts["frames"] / max(1e-9, self.result.seconds + time.monotonic() - started)
            print(
                f"  [{self.setup}] {index:,}/{self.total:,} frames, {rate:.0f}/s, {self.result.findings} findings",
                flush=True,
            )


def render(finding: Finding, hex_limit: int = 2048) -> str:
    """A finding as printed: what, the request's summary, its hex (long ones cut: the JSON line has it)."""
    hexed = finding.hex
    shown = hexed if len(hexed) <= hex_limit else f"{hexed[:hex_limit]}... ({len(hexed) // 2} bytes in all)"
    lines = [
        f"FINDING [{finding.setup}] frame {finding.frame} (seed {finding.seed}): {finding.what}: {finding.detail}",
        f"  request: {finding.summary or '-'}",
        f"  hex: {shown or '-'}",
    ]
    if finding.stderr_tail:
        tail = finding.stderr_tail.strip().splitlines()[-12:]
        lines += ["  stderr:", *(f"    {line}" for line in tail)]
    return "\n".join(lines)


def run_setup(setup: str, frames: int, seed: int, options: dict[str, Any]) -> SetupResult:
    """One set-up's run (the entry point of a worker process)."""
    return SetupRun(setup, frames, seed, **options).run()
