"""The compose file and the Dockerfile agree with the programs they run: every argv is accepted by the
program's own parser, and the ports, volumes, healthchecks and scrape target agree with the flags."""

from __future__ import annotations

import argparse
from pathlib import PurePosixPath
from typing import Any

import pytest

from .deployment import (
    GRAFANA,
    PROGRAMS,
    PROMETHEUS_CONFIG,
    Refused,
    compose,
    console_scripts,
    effective,
    exec_form,
    healthcheck_command,
    load_yaml,
    mount_of,
    mounts,
    parse,
    published_ports,
    service_argv,
    stages,
    url_port,
)

FENCER_SERVICES = {"controller": "fencer", "fleet": "fencer", "analytics": "fencer-analytics"}
FENCER_SERVICES |= {f"controller-{n}": "fencer" for n in (1, 2, 3)} | {"quorum-fleet": "fencer"}


def services() -> dict[str, Any]:
    found: dict[str, Any] = compose()["services"]
    return found


def parsed(service: str) -> argparse.Namespace:
    """The service's argv as its program's parser reads it (the entrypoint from the image if not given)."""
    target = FENCER_SERVICES[service]
    definition = services()[service]
    assert definition["build"]["target"] == target
    return parse(service_argv(definition, exec_form(effective(target, "ENTRYPOINT"))))[1]


def test_the_console_scripts_are_the_programs_parsed_here() -> None:
    scripts = console_scripts()
    assert {name: scripts.get(name) for name in PROGRAMS} == {name: entry for name, (entry, _) in PROGRAMS.items()}


def test_a_flag_no_program_has_is_refused() -> None:
    with pytest.raises(Refused):
        parse(["fencer-controller", "--data-dir", "/d", "--metrics-port", "9094"])
    with pytest.raises(Refused, match="in full"):
        parse(["fencer-fleet", "--claim-broker-id", "/claims"])  # argparse alone takes the prefix
    with pytest.raises(Refused):
        parse(["fencer-fleet", "--brokers", "many"])
    with pytest.raises(Refused):
        parse(["fencer-analyze", "/capture"])  # --out is required
    with pytest.raises(Refused):
        parse(["fencer-ctl", "--data-dir", "/d"])


@pytest.mark.parametrize("service", sorted(FENCER_SERVICES))
def test_every_service_argv_is_accepted_by_its_program(service: str) -> None:
    parsed(service)


@pytest.mark.parametrize("target", ["fencer", "fencer-analytics"])
def test_every_image_entrypoint_and_cmd_is_accepted(target: str) -> None:
    argv = [*exec_form(effective(target, "ENTRYPOINT")), *exec_form(effective(target, "CMD"))]
    if argv[1:] == ["--help"]:  # the analytics image without arguments shows its usage
        with pytest.raises(Refused, match="exited 0"):
            parse(argv)
    else:
        parse(argv)


def test_the_images_default_command_serves_what_it_exposes_and_checks() -> None:
    args = parse([*exec_form(effective("fencer", "ENTRYPOINT")), *exec_form(effective("fencer", "CMD"))])[1]
    assert args.listen[0] == "0.0.0.0" and args.metrics_listen[0] == "0.0.0.0"
    exposed = {int(port) for port in (effective("fencer", "EXPOSE") or "").split()}
    assert exposed == {args.listen[1], args.metrics_listen[1]}
    healthcheck = effective("fencer", "HEALTHCHECK")
    assert healthcheck is not None
    assert url_port(" ".join(healthcheck_command(healthcheck)), "/healthz") == args.metrics_listen[1]


def test_the_controller_listens_on_every_interface_and_publishes_its_ports() -> None:
    args = parsed("controller")
    controller = services()["controller"]
    assert args.listen[0] == "0.0.0.0" and args.metrics_listen[0] == "0.0.0.0"
    assert set(published_ports(controller)) == {args.listen[1], args.metrics_listen[1]}


def test_the_controller_healthcheck_asks_its_metrics_port() -> None:
    controller = services()["controller"]
    test = controller["healthcheck"]["test"]
    assert test[0] == "CMD" and "curl" not in test
    assert url_port(" ".join(test), "/healthz") == parsed("controller").metrics_listen[1]


def test_the_controller_keeps_its_log_and_capture_on_named_volumes() -> None:
    args = parsed("controller")
    controller = services()["controller"]
    for path in (args.data_dir, args.capture_dir):
        mount = mount_of(controller, path)
        assert mount is not None and not mount.bind and not mount.read_only, path


def test_the_controller_has_time_to_drain() -> None:
    grace = services()["controller"]["stop_grace_period"]
    assert grace.endswith("s") and int(grace[:-1]) >= 30  # 5 s of answers, then commits and a snapshot


def test_the_fleet_drives_the_controller_service() -> None:
    fleet, controller = parsed("fleet"), parsed("controller")
    assert fleet.controller == (("controller", controller.listen[1]),)
    assert fleet.session_timeout_ms == controller.session_timeout_ms
    assert services()["fleet"]["depends_on"]["controller"]["condition"] == "service_healthy"


def test_fleet_replicas_claim_their_ids_and_register_a_reachable_address() -> None:
    fleet = parsed("fleet")
    assert fleet.listen_host == "0.0.0.0"  # this container's address, not its loopback
    assert fleet.claim_broker_ids is not None
    mount = mount_of(services()["fleet"], fleet.claim_broker_ids)
    assert mount is not None and not mount.bind and not mount.read_only  # one volume every replica shares


def test_the_fleet_writes_on_a_volume_and_checks_the_controllers_log_read_only() -> None:
    fleet = parsed("fleet")
    definition = services()["fleet"]
    for path in (fleet.capture_dir, fleet.report):
        mount = mount_of(definition, path)
        assert mount is not None and not mount.bind and not mount.read_only, path
    controller_data = mount_of(services()["controller"], parsed("controller").data_dir)
    checked = mount_of(definition, fleet.data_dir)
    assert controller_data is not None and checked is not None
    assert checked.source == controller_data.source and checked.read_only
    assert PurePosixPath(fleet.data_dir) == checked.target  # the data dir itself, not a folder in it


def test_the_fleet_has_no_healthcheck_of_its_own() -> None:
    assert services()["fleet"]["healthcheck"] == {"disable": True}


def test_analytics_reads_every_capture_and_writes_to_the_bind_mount() -> None:
    analytics = services()["analytics"]
    args = parsed("analytics")
    controller, fleet = parsed("controller"), parsed("fleet")
    produced = {  # capture dir as the analytics job names it -> (service, the path that service writes)
        str(controller.capture_dir): ("controller", controller.capture_dir),
        f"{fleet.capture_dir}/slot-*": ("fleet", fleet.capture_dir),  # one per claimed slot
    }
    assert sorted(args.captures) == sorted(produced)
    for capture in args.captures:
        service, path = produced[capture]
        source = mount_of(services()[service], path)
        mount = mount_of(analytics, capture)
        assert source is not None and mount is not None and mount.source == source.source and mount.read_only
    out = mount_of(analytics, args.out)
    assert out is not None and out.bind and out.source == "./compose-output" and out.target != args.out
    assert analytics["profiles"] == ["analytics"]


def test_the_image_makes_every_named_volume_mount_point_for_its_user() -> None:
    made = set()
    for keyword, arguments in stages()["runtime"].instructions:
        if keyword == "RUN" and "install -d -o fencer -g fencer" in arguments:
            made |= {word for word in arguments.split() if word.startswith("/var/lib/fencer/")}
    targets = {
        str(mount.target)
        for name in FENCER_SERVICES
        for mount in mounts(services()[name])
        if not mount.bind  # an empty named volume takes the owner of its mount point in the image
    }
    assert targets <= made, targets - made


def test_prometheus_scrapes_the_controller_service_metrics_port() -> None:
    config = load_yaml(PROMETHEUS_CONFIG)
    jobs = config["scrape_configs"]
    targets = [target for job in jobs for group in job["static_configs"] for target in group["targets"]]
    assert targets == [f"controller:{parsed('controller').metrics_listen[1]}"]
    assert all(job.get("metrics_path", "/metrics") == "/metrics" for job in jobs)
    prometheus = services()["prometheus"]
    assert mount_of(prometheus, "/etc/prometheus/prometheus.yml") is not None
    assert "--config.file=/etc/prometheus/prometheus.yml" in prometheus["command"]


def test_grafana_reads_the_provisioned_datasource_and_dashboards() -> None:
    grafana = services()["grafana"]
    datasource = load_yaml(GRAFANA / "provisioning" / "datasources" / "prometheus.yml")["datasources"][0]
    assert datasource["url"] == "http://prometheus:9090" and "prometheus" in services()
    provider = load_yaml(GRAFANA / "provisioning" / "dashboards" / "fencer.yml")["providers"][0]
    dashboards = mount_of(grafana, provider["options"]["path"])
    provisioning = mount_of(grafana, "/etc/grafana/provisioning/datasources")
    assert dashboards is not None and dashboards.source == "./deploy/grafana/dashboards"
    assert provisioning is not None and provisioning.source == "./deploy/grafana/provisioning"
    assert all(services()[name]["profiles"] == ["monitoring"] for name in ("prometheus", "grafana"))


def test_the_quorum_profile_is_three_voters_at_their_service_names_and_a_fleet_on_all_three() -> None:
    """--profile quorum: each voter listens where the voter list says it is (its
    service name's port, on every interface), names itself, and the fleet tries all three."""
    voters = {n: parsed(f"controller-{n}") for n in (1, 2, 3)}
    lists = {args.controller_quorum_voters for args in voters.values()}
    assert len(lists) == 1
    (voter_list,) = lists
    entries = dict(entry.split("@") for entry in voter_list.split(","))
    for node, args in voters.items():
        assert args.node_id == node and entries[str(node)] == f"controller-{node}:{args.listen[1]}"
        assert args.listen[0] == "0.0.0.0" and services()[f"controller-{node}"]["profiles"] == ["quorum"]
    assert len({str(args.data_dir) for args in voters.values()}) == 1  # each on its own volume:
    assert len({mount_of(services()[f"controller-{n}"], "/var/lib/fencer/data") for n in (1, 2, 3)}) == 3
    fleet = parsed("quorum-fleet")
    assert fleet.controller == tuple((f"controller-{n}", voters[n].listen[1]) for n in (1, 2, 3))
