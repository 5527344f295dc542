"""The deployment files pass their own tools: the compose file validates against the Compose
Specification's schema (vendored by check-jsonschema: offline), the Dockerfile passes hadolint (with
.hadolint.yaml's reasoned exceptions), the Prometheus config passes promtool (or, where promtool is
missing outside CI, a structural check); and the Dockerfile keeps its shape (the
base image a build argument, fencer installed from a wheel in a build stage, a user other than root)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .deployment import (
    COMPOSE_FILE,
    DOCKERFILE,
    PROMETHEUS_CONFIG,
    ROOT,
    VENV_BIN,
    effective,
    exec_form,
    load_yaml,
    runs,
    stages,
)

DURATION = re.compile(r"\d+(ms|s|m|h|d|w|y)")


def run_tool(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_compose_file_follows_the_compose_specification() -> None:
    checked = run_tool(str(VENV_BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(COMPOSE_FILE))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_compose_schema_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "docker-compose.yml"
    bad.write_text("services:\n  controller:\n    stop_grace_period: [60]\n    restart_policy: always\n")
    checked = run_tool(str(VENV_BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(bad))
    assert checked.returncode == 1


def test_the_dockerfile_passes_hadolint() -> None:
    linted = run_tool(str(VENV_BIN / "hadolint"), "--config", str(ROOT / ".hadolint.yaml"), str(DOCKERFILE))
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_every_ignored_hadolint_rule_says_why() -> None:
    text = (ROOT / ".hadolint.yaml").read_text()
    ignored = load_yaml(ROOT / ".hadolint.yaml")["ignored"]
    for rule in ignored:
        before = text[: text.index(f"- {rule}")].rstrip().splitlines()
        assert before[-1].lstrip().startswith("#"), f"{rule} is ignored without a reason above it"


def test_the_base_image_is_a_build_argument_defaulting_to_the_official_image() -> None:
    assert "ARG BASE_IMAGE=python:3.11-slim-bookworm" in DOCKERFILE.read_text().splitlines()
    assert {stage.base for stage in stages().values()} <= {"${BASE_IMAGE}", *stages()}


def test_fencer_is_installed_from_a_wheel_in_a_build_stage_and_only_its_venv_is_copied() -> None:
    installs = [run for run in runs("build") if "pip install" in run]
    assert len(installs) == 1 and re.search(r"pip install (--no-cache-dir )?\.(\s|$)", installs[0])
    assert " -e " not in installs[0] and "--editable" not in installs[0]
    copies = [arguments for keyword, arguments in stages()["runtime"].instructions if keyword == "COPY"]
    assert copies == ["--from=build /opt/fencer /opt/fencer"]


@pytest.mark.parametrize(
    ("target", "entrypoint"), [("fencer", "fencer-controller"), ("fencer-analytics", "fencer-analyze")]
)
def test_each_target_runs_its_console_script_as_a_user_other_than_root(target: str, entrypoint: str) -> None:
    assert exec_form(effective(target, "ENTRYPOINT")) == [entrypoint]
    user = effective(target, "USER")
    assert user is not None and user.split(":")[0] not in ("0", "root")


def test_no_compiler_is_installed_in_an_image() -> None:
    assert not re.search(r"\b(gcc|g\+\+|clang|build-essential|make|python3-dev|libc6-dev)\b", " ".join(runs()))


def test_analytics_has_a_java_17_runtime_and_no_healthcheck() -> None:
    assert any("openjdk-17-jre-headless" in run for run in runs("fencer-analytics"))
    assert effective("fencer-analytics", "HEALTHCHECK") is None


def test_the_fencer_target_is_the_default_one() -> None:
    assert list(stages())[-1] == "fencer"


def test_the_prometheus_config_has_the_shape_prometheus_reads() -> None:
    config = load_yaml(PROMETHEUS_CONFIG)
    assert set(config) <= {"global", "scrape_configs", "rule_files", "alerting"}
    assert all(DURATION.fullmatch(value) for value in config["global"].values())
    names = [job["job_name"] for job in config["scrape_configs"]]
    assert len(names) == len(set(names)) and all(names)
    for job in config["scrape_configs"]:
        assert set(job) <= {"job_name", "metrics_path", "scrape_interval", "static_configs"}
        for group in job["static_configs"]:
            assert all(re.fullmatch(r"[a-z0-9.-]+:\d{1,5}", target) for target in group["targets"])


def test_the_prometheus_config_passes_promtool() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        assert os.environ.get("CI") != "true", "CI must install promtool (Debian: apt-get install prometheus)"
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus); the structural check ran")
    checked = run_tool(promtool, "check", "config", str(PROMETHEUS_CONFIG))
    assert checked.returncode == 0, checked.stdout + checked.stderr
