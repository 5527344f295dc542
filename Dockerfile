# fencer's one image (README.md, "Docker compose"). Targets:
#   fencer            the controller (`fencer-controller`, the default entrypoint) and the fleet
#                     (`--entrypoint fencer-fleet`); the default target
#   fencer-analytics  the same venv and a Java 17 runtime for Spark; entrypoint `fencer-analyze`
#
# BASE_IMAGE: any Debian bookworm image with Python 3.11 as `python3` and its venv module; the
# official one by default, a mirror's or a local one where Docker Hub cannot be reached
# (`--build-arg BASE_IMAGE=...`). Every stage starts from it, so the venv's interpreter link
# points at the same Python in the build and runtime stages.
ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv /opt/fencer
WORKDIR /src
COPY pyproject.toml README.md ./
COPY protocol/ protocol/
COPY controller/ controller/
COPY broker_sim/ broker_sim/
COPY analytics/ analytics/
# `pip install .` builds a wheel and installs it: the venv holds every module it runs, nothing
# points back at /src (an editable install would). Every dependency ships wheels or is pure Python
# (pyspark), so no compiler is needed, here or below. The import is a smoke test.
RUN /opt/fencer/bin/pip install --no-cache-dir . \
    && /opt/fencer/bin/python -c "import controller.server.cli, broker_sim.cli, analytics.job"

# What both targets share: the venv, a non-root user (10001, named by number in USER below, so that
# a runtime can tell it is not root without the passwd file), and the directories the compose file
# mounts volumes on (an empty named volume takes their owner, so the user can write to it).
FROM ${BASE_IMAGE} AS runtime
RUN groupadd --gid 10001 fencer \
    && useradd --no-log-init --uid 10001 --gid fencer --create-home --home-dir /var/lib/fencer \
        --shell /usr/sbin/nologin fencer \
    && install -d -o fencer -g fencer /var/lib/fencer/data /var/lib/fencer/capture /var/lib/fencer/fleet \
        /var/lib/fencer/controller-data /var/lib/fencer/output
COPY --from=build /opt/fencer /opt/fencer
ENV PATH=/opt/fencer/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /var/lib/fencer

FROM runtime AS fencer-analytics
USER 0
# openjdk's postinst writes man page links: slim images delete /usr/share/man
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
USER 10001:10001
ENTRYPOINT ["fencer-analyze"]
CMD ["--help"]

# Last, so that a build without --target makes it.
FROM runtime AS fencer
USER 10001:10001
EXPOSE 9093 9094
# /healthz is answered by the daemon's event loop itself; slim images have no curl
HEALTHCHECK --interval=5s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9094/healthz', timeout=2)"]
ENTRYPOINT ["fencer-controller"]
CMD ["--data-dir", "/var/lib/fencer/data", "--listen", "0.0.0.0:9093", "--metrics-listen", "0.0.0.0:9094"]
