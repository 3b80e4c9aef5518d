"""The metric names Porch's capacity page parses (server/src/metrics/replication.rs) exist in a
real Litestream's Prometheus endpoint, served through docker/litestream.yml on a loopback port,
with the `db` label ending in porch.db.
"""

import re
import time
import urllib.request

from conftest import REPO, free_port, run

WAIT = 15


def parsed_names() -> list[str]:
    source = (REPO / "server" / "src" / "metrics" / "replication.rs").read_text()
    names = re.findall(r'^pub const [A-Z_]+: &str = "(litestream_[a-z_]+)";', source, re.MULTILINE)
    assert len(names) == 4, names
    return names


def test_litestream_serves_the_metrics_porch_parses(porch_bin, litestream_bin, processes, tmp_path):
    data = tmp_path / "data"
    run([porch_bin, "--data-dir", data, "migrate"])
    port = free_port()
    env = {"PORCH_DATA_DIR": str(data), "LITESTREAM_REPLICA_URL": f"file://{tmp_path / 'r'}",
           "LITESTREAM_SYNC_INTERVAL": "1s", "LITESTREAM_SOCKET": str(tmp_path / "s"),
           "LITESTREAM_METRICS_ADDR": f"127.0.0.1:{port}"}
    with open(tmp_path / "litestream.log", "w") as log:
        litestream = processes.start(
            [litestream_bin, "replicate", "-config", REPO / "docker" / "litestream.yml"],
            env=env, stdout=log, stderr=log)
    wanted = {name: re.compile(rf'^{name}{{db="[^"]*/porch\.db"}} \d', re.MULTILINE)
              for name in parsed_names()}
    deadline, text = time.monotonic() + WAIT, ""
    while time.monotonic() < deadline:
        assert litestream.poll() is None, (tmp_path / "litestream.log").read_text()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                text = r.read().decode()
        except OSError:
            text = ""
        if text and all(p.search(text) for p in wanted.values()):
            break
        time.sleep(0.2)
    missing = [name for name, p in wanted.items() if not p.search(text)]
    assert not missing, f"missing {missing} in:\n{text}"
    # Litestream syncs once a second even without writes: the counter Porch ages rises.
    count = re.compile(r'^litestream_sync_count{db="[^"]*/porch\.db"} (\d+)', re.MULTILINE)
    first = int(count.search(text).group(1))
    time.sleep(2.5)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
        later = int(count.search(r.read().decode()).group(1))
    assert later > first, (first, later)
