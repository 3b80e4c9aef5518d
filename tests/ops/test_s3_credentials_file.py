"""S3 keys for the Litestream sidecar from a file instead of the environment (a Docker secret):
`AWS_SHARED_CREDENTIALS_FILE`, which compose.yml passes through. Run with a real Litestream and
docker/litestream.yml against moto's S3 server on loopback: with the file, the database is
replicated and restores; without it, Litestream finds no credentials and nothing is uploaded.
Instance metadata (the credential chain's last resort) is switched off, so nothing leaves the
machine."""

import sqlite3
import time
import urllib.request
from pathlib import Path

import yaml

from conftest import REPO, WAIT, _venv_binary, free_port, run

DOCKER = REPO / "docker"
BUCKET = "porch-backups"


def start_s3(processes, tmp_path) -> str:
    """moto's S3 server on loopback with one bucket; returns its URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(tmp_path / "s3.log", "w") as log:
        processes.start([_venv_binary("moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                        stdout=log, stderr=log)
    deadline = time.monotonic() + WAIT
    while True:
        try:
            urllib.request.urlopen(urllib.request.Request(f"{url}/{BUCKET}", method="PUT"))
            return url
        except OSError:
            assert time.monotonic() < deadline, (tmp_path / "s3.log").read_text()
            time.sleep(0.1)


def uploaded(s3: str) -> bytes:
    return urllib.request.urlopen(f"{s3}/{BUCKET}?list-type=2").read()


def database(tmp_path: Path) -> Path:
    db = tmp_path / "porch.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.executemany("INSERT INTO t (x) VALUES (?)", [(n,) for n in range(100)])
    conn.commit()
    conn.close()
    return db


def litestream_env(tmp_path: Path, s3: str, credentials: Path) -> dict:
    return {
        "PORCH_DATA_DIR": str(tmp_path),
        "LITESTREAM_REPLICA_URL":
            f"s3://{BUCKET}/porch?endpoint={s3}&region=us-east-1&force-path-style=true",
        "LITESTREAM_SYNC_INTERVAL": "1s",
        "LITESTREAM_SOCKET": str(tmp_path / "ls.sock"),
        "AWS_SHARED_CREDENTIALS_FILE": str(credentials),
        # Only the file may supply credentials: no keys from the environment, no instance role.
        "LITESTREAM_ACCESS_KEY_ID": "",
        "LITESTREAM_SECRET_ACCESS_KEY": "",
        "AWS_ACCESS_KEY_ID": "",
        "AWS_SECRET_ACCESS_KEY": "",
        "AWS_EC2_METADATA_DISABLED": "true",
        # A CA bundle from the machine's environment would stop the SDK from loading at all.
        "AWS_CA_BUNDLE": "",
    }


def test_compose_passes_the_credentials_file_variable_to_the_sidecar():
    compose = yaml.safe_load((DOCKER / "compose.yml").read_text())
    assert "AWS_SHARED_CREDENTIALS_FILE" in compose["services"]["litestream"]["environment"]


def test_s3_keys_from_a_credentials_file_replicate_and_restore(
    tmp_path, litestream_bin, processes
):
    s3 = start_s3(processes, tmp_path)
    db = database(tmp_path)
    credentials = tmp_path / "aws-credentials"
    credentials.write_text("[default]\naws_access_key_id = AKIDFROMFILE\n"
                           "aws_secret_access_key = secret-from-a-file\n")
    env = litestream_env(tmp_path, s3, credentials)
    with open(tmp_path / "litestream.log", "w") as log:
        litestream = processes.start([litestream_bin, "replicate", "-config",
                                      DOCKER / "litestream.yml"], env=env, stdout=log, stderr=log)
    deadline = time.monotonic() + WAIT
    while b".ltx</Key>" not in uploaded(s3):
        assert litestream.poll() is None, (tmp_path / "litestream.log").read_text()
        assert time.monotonic() < deadline, (tmp_path / "litestream.log").read_text()
        time.sleep(0.2)
    litestream.terminate()
    litestream.wait(timeout=WAIT)

    restored = tmp_path / "restored.db"
    run([litestream_bin, "restore", "-o", restored, env["LITESTREAM_REPLICA_URL"]],
        env=env)
    conn = sqlite3.connect(restored)
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 100
    conn.close()


def test_without_the_file_nothing_is_uploaded(tmp_path, litestream_bin, processes):
    s3 = start_s3(processes, tmp_path)
    database(tmp_path)
    env = litestream_env(tmp_path, s3, tmp_path / "no-such-file")
    with open(tmp_path / "litestream.log", "w") as log:
        processes.start([litestream_bin, "replicate", "-config", DOCKER / "litestream.yml"],
                        env=env, stdout=log, stderr=log)
    log = tmp_path / "litestream.log"
    deadline = time.monotonic() + WAIT
    while "credentials" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)
    assert b".ltx</Key>" not in uploaded(s3)
