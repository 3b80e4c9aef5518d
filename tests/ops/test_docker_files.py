"""The files in docker/ parse, and agree with each other and with the porch binary: the port,
the data directory and database path, the shared volume, the user, the health checks, and the
variables .env.example documents. Plus hadolint on the Dockerfile. No Docker engine runs here, so
this checks what the container runs rather than building the image.
"""

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO, run

DOCKER = REPO / "docker"
COMPOSE_VARIABLE = re.compile(r"\$\{([A-Z0-9_]+)(?:[:?-][^}]*)?\}")


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    text = (DOCKER / "Dockerfile").read_text()
    logical, current = [], ""
    for line in text.splitlines():
        if line.strip().startswith("#") or not line.strip():
            continue
        current += " " + line.strip().rstrip("\\").strip()
        if not line.rstrip().endswith("\\"):
            logical.append(current.strip())
            current = ""
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in logical]


def runtime_stage() -> list[tuple[str, str]]:
    instructions = dockerfile_instructions()
    last_from = max(i for i, (op, _) in enumerate(instructions) if op == "FROM")
    return instructions[last_from:]


def env_of(stage) -> dict:
    env = {}
    for op, args in stage:
        if op == "ENV":
            env.update(dict(part.split("=", 1) for part in shlex.split(args)))
    return env


def load(name: str) -> dict:
    return yaml.safe_load((DOCKER / name).read_text())


@pytest.fixture(scope="module")
def compose() -> dict:
    return load("compose.yml")


@pytest.fixture(scope="module")
def serve_help(porch_bin) -> str:
    return run([porch_bin, "serve", "--help"]).stdout


def test_hadolint_passes(hadolint_bin):
    result = subprocess.run([hadolint_bin, DOCKER / "Dockerfile"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_builds_in_stages_and_runs_unprivileged_on_the_data_volume():
    instructions = dockerfile_instructions()
    stages = [args for op, args in instructions if op == "FROM"]
    assert stages[0].startswith("rust:1.95") and " AS build" in stages[0]
    assert stages[-1].startswith("debian:bookworm-slim")
    assert any("cargo build --release --locked -p porch" in a for op, a in instructions if op == "RUN")
    stage = runtime_stage()
    users = [args for op, args in stage if op == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    assert ('VOLUME', '["/data"]') in stage
    assert any(op == "HEALTHCHECK" and "porch" in args and "health" in args for op, args in stage)
    assert ("CMD", '["porch", "serve"]') in stage
    assert any(op == "COPY" and "--from=build" in args for op, args in stage)


def test_dockerfile_port_and_data_dir_match_the_binary(porch_bin, serve_help, tmp_path):
    stage = runtime_stage()
    env = env_of(stage)
    exposed = [args for op, args in stage if op == "EXPOSE"]
    host, port = env["PORCH_LISTEN"].rsplit(":", 1)
    assert host == "0.0.0.0", "inside a container Porch must listen on every interface"
    assert exposed == [port]
    # The binary's own default port is the one the image exposes.
    assert f"[default: 127.0.0.1:{port}]" in serve_help
    assert env["PORCH_DATA_DIR"] == "/data"
    # The database file name Litestream replicates is the one Porch creates.
    run([porch_bin, "--data-dir", tmp_path, "migrate"])
    assert (tmp_path / "porch.db").is_file()


def test_compose_runs_porch_and_litestream_on_one_volume(compose):
    services = compose["services"]
    assert set(services) == {"porch", "litestream"}
    assert "data" in compose["volumes"]
    for name, service in services.items():
        assert "data:/data" in service["volumes"], name
        assert service["restart"] == "unless-stopped", name
        assert service["healthcheck"]["test"][0] == "CMD", name
    porch, litestream = services["porch"], services["litestream"]
    assert porch["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
    assert any(port.endswith(":8080") for port in porch["ports"])
    assert porch["healthcheck"]["test"][1:3] == ["porch", "health"]
    assert litestream["image"].startswith("litestream/litestream:")
    assert litestream["depends_on"]["porch"]["condition"] == "service_healthy"
    # One owner for the files on the shared volume: the image's user.
    image_user = [args for op, args in runtime_stage() if op == "USER"][-1]
    assert litestream["user"] == image_user


def test_litestream_replicates_the_database_porch_writes(compose, litestream_bin, tmp_path):
    config = load("litestream.yml")
    environment = compose["services"]["litestream"]["environment"]
    lines = (DOCKER / "litestream.yml").read_text().splitlines()
    used = set(COMPOSE_VARIABLE.findall("\n".join(l for l in lines if not l.lstrip().startswith("#"))))
    assert used <= set(environment), f"compose does not set {used - set(environment)}"
    (db,) = config["dbs"]
    assert db["path"].replace("${PORCH_DATA_DIR}", environment["PORCH_DATA_DIR"]) == "/data/porch.db"
    assert db["replica"]["url"] == "${LITESTREAM_REPLICA_URL}"
    assert config["socket"]["path"] == "${LITESTREAM_SOCKET}"
    assert environment["LITESTREAM_SOCKET"] in " ".join(
        compose["services"]["litestream"]["healthcheck"]["test"])
    # The real Litestream accepts the file with the variables set.
    env = {"PORCH_DATA_DIR": str(tmp_path), "LITESTREAM_REPLICA_URL": f"file://{tmp_path}/r",
           "LITESTREAM_SYNC_INTERVAL": "1s", "LITESTREAM_SOCKET": str(tmp_path / "s")}
    listed = run([litestream_bin, "databases", "-config", DOCKER / "litestream.yml"], env=env)
    assert f"{tmp_path}/porch.db" in listed.stdout


def test_the_restore_variant_restores_before_porch_starts(compose):
    override = load("compose.restore.yml")
    restore = override["services"]["restore"]
    script = " ".join(restore["command"])
    assert "litestream restore" in script
    assert "-if-db-not-exists" in script and "-if-replica-exists" in script
    assert "$${PORCH_DATA_DIR}/porch.db" in script
    assert "chown -R 10001:10001" in script
    assert script.startswith("umask 027 && "), script  # the file 0640, not 0644
    assert restore["volumes"] == compose["services"]["litestream"]["volumes"][:2]
    assert restore["environment"] == compose["services"]["litestream"]["environment"]
    condition = override["services"]["porch"]["depends_on"]["restore"]["condition"]
    assert condition == "service_completed_successfully"


def test_env_example_lists_every_variable_the_compose_files_use():
    used = set()
    for name in ("compose.yml", "compose.restore.yml"):
        text = (DOCKER / name).read_text()
        used |= set(COMPOSE_VARIABLE.findall(text))
        # Keys without a value are passed on from .env too.
        used |= set(re.findall(r"^\s+([A-Z0-9_]+):\s*$", text, re.MULTILINE))
    example = (DOCKER / ".env.example").read_text()
    listed = set(re.findall(r"^#?\s?([A-Z][A-Z0-9_]+)=", example, re.MULTILINE))
    # Set by compose itself, not by the operator.
    internal = {"PORCH_DATA_DIR", "LITESTREAM_SOCKET"}
    assert used - internal <= listed, f"not in .env.example: {used - internal - listed}"
    assert listed <= used, f"in .env.example but unused: {listed - used}"
    # Each listed variable has a comment just above its block.
    for variable in listed:
        before = example.split(f"{variable}=")[0].rstrip().splitlines()
        assert any(line.startswith("#") for line in before[-4:]), variable


def test_images_are_tagged_by_version_so_the_previous_one_survives_an_upgrade(compose):
    image = compose["services"]["porch"]["image"]
    # Required, no default: a default such as `latest` is overwritten by the next `up --build`.
    assert re.fullmatch(r"porch:\$\{IMAGE_TAG:\?[^}]+\}", image), image
    tag = re.search(r"^IMAGE_TAG=(.*)$", (DOCKER / ".env.example").read_text(), re.MULTILINE)
    assert tag and tag.group(1) not in ("", "latest"), tag


def test_litestream_health_is_a_sync_that_must_reach_the_replica(compose):
    check = compose["services"]["litestream"]["healthcheck"]
    assert check["test"][:4] == ["CMD", "litestream", "sync", "-wait"], check["test"]
    assert check["test"][-1] == "/data/porch.db"
    timeout = int(check["test"][check["test"].index("-timeout") + 1])
    # Docker kills a check that outlives its timeout: let Litestream's own timeout answer first.
    assert int(check["timeout"].rstrip("s")) > timeout


def test_porch_scrapes_the_metrics_address_litestream_serves(compose):
    porch = compose["services"]["porch"]["environment"]
    litestream = compose["services"]["litestream"]
    assert load("litestream.yml")["addr"] == "${LITESTREAM_METRICS_ADDR}"
    addr = litestream["environment"]["LITESTREAM_METRICS_ADDR"]
    url = porch["PORCH_LITESTREAM_METRICS_URL"]
    match = re.fullmatch(r"http://([a-z]+):(\d+)/metrics", url)
    assert match, url
    host, port = match.groups()
    assert host == "litestream" and host in compose["services"]
    assert addr == f":{port}", (addr, url)
    # Not published on the host: only Porch, on compose's network, reads it.
    assert "ports" not in litestream


def in_build_context(path: Path) -> bool:
    """Whether .dockerignore lets `path` (relative to the repository) into the build context:
    its rules in order, the last that matches a leading part of the path wins."""
    kept = False
    for line in (REPO / ".dockerignore").read_text().splitlines():
        rule = line.strip()
        if not rule or rule.startswith("#"):
            continue
        keep = rule.startswith("!")
        pattern = rule.lstrip("!").rstrip("/")
        parts = path.parts
        if pattern == "*" or any("/".join(parts[:n]) == pattern for n in range(1, len(parts) + 1)):
            kept = keep
    return kept


def test_the_build_context_holds_every_file_the_sources_compile_in():
    # include_str!/include_bytes! with a literal path, and the docs the admin UI serves
    # (app/src/docs.rs names them through a macro: "../../docs/" + each path).
    included = re.compile(r'include_(?:str|bytes)!\(\s*"([^"]+)"')
    wanted = []
    for source in [*REPO.glob("server/src/**/*.rs"), *REPO.glob("app/src/**/*.rs")]:
        text = source.read_text()
        for relative in included.findall(text):
            wanted.append((source.parent / relative).resolve().relative_to(REPO))
        if '"../../docs/"' in text:
            wanted += [doc.relative_to(REPO) for doc in REPO.glob("docs/**/*.md")
                       if "capacity-results" not in doc.parts]
    assert len(wanted) > 40, wanted
    missing = [str(p) for p in wanted if not in_build_context(p)]
    assert not missing, f".dockerignore leaves out what the build compiles in: {missing}"
    assert not in_build_context(Path("docs/capacity-results/x.json")), "results stay out"
    assert not in_build_context(Path("tests/browser/package.json"))
