"""The systemd units of deploy/systemd (docs/operations.md, "Without Docker") run what they say:
porch.service's command with its environment and the example settings starts Porch, which stops
on the unit's signal within its stop timeout; porch-litestream.service's command with its
environment replicates that database with docker/litestream.yml, and the replica restores. Their
settings agree with docker/compose.yml, every variable they set is one Porch or
docker/litestream.yml reads, and `systemd-analyze verify` accepts both where it is installed.
Paths of the installed system (/var/lib/porch, /run/…, /usr/local/bin) are mapped to a temporary
directory and the binaries under test.
"""

import re
import shutil
import signal
import sqlite3
import subprocess
import time

import pytest
import yaml

from conftest import REPO, WAIT, Server, free_port, run

SYSTEMD = REPO / "deploy" / "systemd"
DOCKER = REPO / "docker"


def unit(name: str, section: str = "[Service]") -> dict[str, list[str]]:
    """A section's keys, each with every value given (Environment= repeats)."""
    current, keys = None, {}
    for line in (SYSTEMD / name).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            current = line
        elif current == section:
            key, value = line.split("=", 1)
            keys.setdefault(key, []).append(value)
    return keys


def environment(service: dict[str, list[str]]) -> dict[str, str]:
    return dict(value.split("=", 1) for value in service.get("Environment", []))


def example_settings() -> dict[str, str]:
    lines = (SYSTEMD / "porch.env.example").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def seconds(value: str) -> int:
    return int(value.removesuffix("s"))


def test_the_units_agree_with_compose_and_name_only_real_settings(porch_bin):
    porch, litestream = unit("porch.service"), unit("porch-litestream.service")
    compose = yaml.safe_load((DOCKER / "compose.yml").read_text())["services"]
    assert seconds(porch["TimeoutStopSec"][0]) >= seconds(compose["porch"]["stop_grace_period"])
    assert porch["User"] == litestream["User"] == ["porch"], "one owner for the data directory"
    assert int(porch["LimitNOFILE"][0]) >= 65536
    assert porch["Restart"] == ["on-failure"]
    data_dir = "/var/lib/" + porch["StateDirectory"][0]
    assert environment(porch)["PORCH_DATA_DIR"] == environment(litestream)["PORCH_DATA_DIR"] == data_dir
    # Every PORCH_ variable the unit or the example sets is one `porch serve` reads.
    help_text = run([porch_bin, "serve", "--help"]).stdout
    for name in {**environment(porch), **example_settings()}:
        if name != "PORCH_DATA_DIR":
            assert f"env: {name}=" in help_text, f"{name} is not a porch serve setting"
    # Litestream has no defaults: the unit sets every variable docker/litestream.yml names but the
    # replica's, which its EnvironmentFile holds.
    config = [line for line in (DOCKER / "litestream.yml").read_text().splitlines()
              if not line.lstrip().startswith("#")]
    named = set(re.findall(r"\$\{([A-Z_]+)\}", "\n".join(config)))
    assert named - set(environment(litestream)) == {"LITESTREAM_REPLICA_URL"}
    # As compose's depends_on service_healthy: only beside a running Porch that passed its checks.
    assert unit("porch-litestream.service", "[Unit]")["BindsTo"] == ["porch.service"]
    assert "porch health --path /readyz" in litestream["ExecStartPre"][0]
    # Porch scrapes the sidecar's metrics where the unit serves them.
    metrics = example_settings()["PORCH_LITESTREAM_METRICS_URL"]
    assert metrics == f"http://{environment(litestream)['LITESTREAM_METRICS_ADDR']}/metrics"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_accepts_both_units(tmp_path, porch_bin, litestream_bin):
    for name, installed, binary in (("porch.service", "porch", porch_bin),
                                    ("porch-litestream.service", "litestream", litestream_bin)):
        text = (SYSTEMD / name).read_text().replace(f"/usr/local/bin/{installed}", str(binary))
        (tmp_path / name).write_text(text)
        verified = run(["systemd-analyze", "verify", tmp_path / name], check=False)
        assert verified.returncode == 0, verified.stderr


def command(service: dict[str, list[str]], binary, paths: dict[str, str]) -> list[str]:
    """ExecStart with the installed paths mapped to this test's."""
    args = service["ExecStart"][0].split()
    return [str(binary)] + [paths.get(arg, arg) for arg in args[1:]]


def test_the_units_serve_replicate_and_stop_as_written(tmp_path, porch_bin, litestream_bin, processes):
    porch, litestream = unit("porch.service"), unit("porch-litestream.service")
    data, replica = tmp_path / "data", tmp_path / "replica"
    data.mkdir(mode=0o750)
    metrics_port = free_port()
    paths = {"/var/lib/porch": str(data), "/etc/porch/litestream.yml": str(DOCKER / "litestream.yml"),
             "/run/porch-litestream/litestream.sock": str(tmp_path / "litestream.sock"),
             "127.0.0.1:9090": f"127.0.0.1:{metrics_port}"}
    settings = {**example_settings(), **environment(porch)}
    settings.update(PORCH_DATA_DIR=str(data), PORCH_LISTEN="127.0.0.1:0",
                    PORCH_PUBLIC_URL="http://127.0.0.1:8080",
                    PORCH_LITESTREAM_METRICS_URL=f"http://127.0.0.1:{metrics_port}/metrics")
    # The sidecar's gate waits while Porch does not answer, and lets it start once Porch is ready.
    gate = litestream["ExecStartPre"][0].replace("/usr/local/bin/porch", str(porch_bin))
    gate_command = ["timeout", "3", "/bin/sh", "-c", gate.split("-c ", 1)[1].strip("'")]
    waiting = run(gate_command, env={"PORCH_LISTEN": f"127.0.0.1:{free_port()}"}, check=False)
    assert waiting.returncode == 124, waiting
    server = Server(processes.start(command(porch, porch_bin, paths), env=settings,
                                    stderr=subprocess.PIPE))
    server.wait_ready()
    opened = run(gate_command, env={"PORCH_LISTEN": server.addr}, check=False)
    assert opened.returncode == 0, opened

    ls_env = {name: paths.get(value, value) for name, value in environment(litestream).items()}
    ls_env.update(PORCH_DATA_DIR=str(data), LITESTREAM_REPLICA_URL=f"file://{replica}")
    with open(tmp_path / "litestream.log", "w") as log:
        replicating = processes.start(command(litestream, litestream_bin, paths), env=ls_env,
                                      stdout=log, stderr=log)
    added = run([porch_bin, "--data-dir", data, "site", "add", "--name", "Unit Shop",
                 "--origin", "https://shop.example", "--public-url", "https://chat.example"])
    assert added.returncode == 0, added.stderr
    # Shipped: `litestream sync -wait` through the unit's socket, as before an upgrade.
    deadline = time.monotonic() + WAIT
    while run([litestream_bin, "sync", "-wait", "-socket", ls_env["LITESTREAM_SOCKET"],
               data / "porch.db"], check=False).returncode != 0:
        assert replicating.poll() is None, (tmp_path / "litestream.log").read_text()
        assert time.monotonic() < deadline, (tmp_path / "litestream.log").read_text()
        time.sleep(0.2)
    restored = tmp_path / "restored.db"
    run([litestream_bin, "restore", "-config", DOCKER / "litestream.yml", "-o", restored,
         data / "porch.db"], env={**ls_env})
    names = [row[0] for row in sqlite3.connect(restored).execute("SELECT name FROM sites")]
    assert names == ["Unit Shop"]

    # The unit's stop signal: a graceful stop well within its timeout, exit 0.
    stop = getattr(signal, porch["KillSignal"][0])
    started = time.monotonic()
    server.process.send_signal(stop)
    assert server.process.wait(timeout=seconds(porch["TimeoutStopSec"][0])) == 0, "".join(server.log)
    assert time.monotonic() - started < seconds(porch["TimeoutStopSec"][0])
