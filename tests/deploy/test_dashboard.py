"""The Grafana dashboard queries only what the controller exports: every metric name in its PromQL has
samples in a real /metrics scrape of the daemon after a short fleet run, and the panels it must
have (`REQUIRED`) are there."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.broker_sim.fleet_command import run_fleet_command
from tests.e2e.daemon_process import DaemonProcess, free_port

from .deployment import DASHBOARD, GRAFANA, load_yaml

#: PromQL's functions, aggregation operators and keywords: never metric names.
_PROMQL_WORDS = """
abs absent absent_over_time avg_over_time ceil changes clamp clamp_max clamp_min count_over_time day_of_month
day_of_week day_of_year days_in_month delta deriv exp floor histogram_avg histogram_count histogram_fraction
histogram_quantile histogram_stddev histogram_stdvar histogram_sum holt_winters hour idelta increase irate label_join
label_replace last_over_time ln log10 log2 mad_over_time max_over_time min_over_time minute month predict_linear
present_over_time quantile_over_time rate resets round scalar sgn sort sort_by_label sort_by_label_desc sort_desc sqrt
stddev_over_time stdvar_over_time sum_over_time time timestamp vector year sin cos tan asin acos atan sinh cosh tanh
asinh acosh atanh deg rad pi
sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio
by without on ignoring group_left group_right offset bool and or unless atan2 inf nan
"""
PROMQL_WORDS = frozenset(_PROMQL_WORDS.split())
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"(?<![\w.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(?=\s*([{\[)\s,]|$))")
#: What the dashboard must show, by the metric that shows it.
REQUIRED = {
    "fencer_requests_total",  # request rates by API, errors by code
    "fencer_request_latency_seconds_bucket",  # latencies by API
    "fencer_request_failures_total",  # requests the controller failed on, by stage
    "fencer_controller_fenced_broker_count",  # fenced brokers
    "fencer_controller_controlled_shutdown_broker_count",  # shutting-down brokers
    "fencer_controller_active_broker_count",
    "fencer_isr_shrinks_total",  # ISR shrinks
    "fencer_isr_expands_total",  # ISR expands
    "fencer_metadata_log_size_bytes",  # log size
    "fencer_log_append_latency_seconds_bucket",  # commit latency
    "fencer_controller_last_applied_record_offset",  # the log's length
}


def metric_names(expression: str) -> set[str]:
    """The metric names a PromQL expression selects: identifiers that are not functions, operators,
    keywords or label names (strings, label matchers, ranges and grouping labels are dropped first)."""
    bare = _GROUPING.sub(" ", _RANGE.sub(" ", _MATCHERS.sub(" ", _STRING.sub('""', expression))))
    return {match.group(1) for match in _IDENTIFIER.finditer(bare)} - PROMQL_WORDS


def panels(container: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, rows' nested panels included."""
    found = []
    for panel in container.get("panels", []):
        found.append(panel)
        found.extend(panels(panel))
    return found


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def queried() -> dict[str, set[str]]:
    """Metric name -> the titles of the panels that query it."""
    names: dict[str, set[str]] = {}
    for panel in panels(dashboard()):
        for target in panel.get("targets", []):
            for name in metric_names(target["expr"]):
                names.setdefault(name, set()).add(panel["title"])
    return names


def sampled(text: str) -> set[str]:
    """The metric names of the samples in a Prometheus text exposition (comments are not samples)."""
    return {re.split(r"[{\s]", line, maxsplit=1)[0] for line in text.splitlines() if line and not line.startswith("#")}


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        ("fencer_controller_epoch", {"fencer_controller_epoch"}),
        (
            "histogram_quantile(0.99, sum by (api, le) (rate(fencer_request_latency_seconds_bucket[$__rate_interval])))"
            " > bool 0.5",
            {"fencer_request_latency_seconds_bucket"},
        ),
        ('sum by (error) (rate(fencer_requests_total{error!="NONE", api=~"a|b"}[1m]))', {"fencer_requests_total"}),
        ("rate(x_seconds_sum[5m]) / rate(x_seconds_count[5m])", {"x_seconds_sum", "x_seconds_count"}),
        ("sum(up) by (job) > 0 and on (job) other_metric offset 5m", {"up", "other_metric"}),
        ('label_replace(a, "dst", "$1", "src", "(.*)")', {"a"}),
    ],
)
def test_metric_names_are_read_out_of_promql(expression: str, names: set[str]) -> None:
    assert metric_names(expression) == names


def test_every_panel_queries_the_provisioned_prometheus() -> None:
    datasource = load_yaml(GRAFANA / "provisioning" / "datasources" / "prometheus.yml")["datasources"][0]
    for panel in panels(dashboard()):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": datasource["uid"]}, panel["title"]
        assert panel["targets"] and all(target["expr"].strip() for target in panel["targets"]), panel["title"]
        assert all(target["datasource"] == panel["datasource"] for target in panel["targets"]), panel["title"]


def test_the_dashboard_shows_what_issue_17_asks() -> None:
    assert set(queried()) >= REQUIRED
    expressions = " ".join(target["expr"] for panel in panels(dashboard()) for target in panel.get("targets", []))
    assert "by (api)" in expressions and "by (error)" in expressions  # rates by API, errors by code


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text: str = response.read().decode()
        return text


def test_every_metric_the_dashboard_queries_is_in_a_real_scrape(tmp_path: Path) -> None:
    metrics_port = free_port()
    session = ("--session-timeout-ms", "3000")
    metrics = ("--metrics-listen", f"127.0.0.1:{metrics_port}", "--capture-dir", str(tmp_path / "capture"))
    daemon = DaemonProcess(tmp_path / "data", *metrics, *session).start()
    try:
        fleet = run_fleet_command(
            *("run", "--controller", f"127.0.0.1:{daemon.port}", "--brokers", "3", "--duration", "4"),
            *("--heartbeat-ms", "1000", *session, "--scenario", "steady"),
        )
        assert fleet.returncode == 0, fleet.stdout + fleet.stderr
        wanted = queried()
        # the brokers are gone: their sessions expire, and the control requests that follow fail to connect
        deadline = time.monotonic() + 30
        missing = set(wanted) - sampled(_scrape(metrics_port))
        while missing and time.monotonic() < deadline:
            time.sleep(0.5)
            missing = set(wanted) - sampled(_scrape(metrics_port))
        assert {name: sorted(wanted[name]) for name in missing} == {}
    finally:
        assert daemon.stop() == 0, daemon.stderr()
