"""The automatic restore of docker/compose.restore.yml, its two one-shot services run as compose
runs them (their shell commands from the file, with the real Litestream and Porch): after a
restore, the id counters are moved past what the lost server may have handed out after
Litestream's last sync, once, before Porch starts; a boot that finds the database on the volume
restores nothing and moves nothing (docs/operations.md, "Restore").

What differs from the container is only where things are: the commands' `$$` is compose's escape
for `$`, `/etc/litestream.yml` is the repository's docker/litestream.yml, the binaries are found on
PATH as in the images, and the volume is handed to this test's user instead of uid 10001.
"""

import asyncio
import os
import sqlite3

import yaml

from conftest import REPO, run
from test_restore_drill import Replicated, chat

MARGIN = 1_000_000


def service_script(name: str) -> str:
    """The shell command of a service of compose.restore.yml, as the container's shell gets it."""
    compose = yaml.safe_load((REPO / "docker" / "compose.restore.yml").read_text())
    script = " ".join(compose["services"][name]["command"]).replace("$$", "$")
    script = script.replace("/etc/litestream.yml", str(REPO / "docker" / "litestream.yml"))
    return script.replace("chown -R 10001:10001", f"chown -R {os.getuid()}:{os.getgid()}")


def images_path(tmp_path, porch_bin, litestream_bin) -> str:
    """A PATH on which `porch` and `litestream` are the binaries under test, as in the images."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "litestream").symlink_to(litestream_bin)
    (bin_dir / "porch").symlink_to(porch_bin)
    return f"{bin_dir}:{os.environ['PATH']}"


def next_message_id(db) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone()
    return row[0] + 1


def test_an_automatic_restore_moves_the_ids_past_the_lost_moments(
    tmp_path, porch_bin, litestream_bin, processes
):
    pair = Replicated(tmp_path, porch_bin, litestream_bin, processes)
    acked = asyncio.run(chat(pair.server.addr, pair.site, 2, "before the loss"))
    run(pair.sync_command())
    processes.kill_all()

    volume = tmp_path / "volume"
    volume.mkdir()
    env = {**pair.env, "PORCH_DATA_DIR": str(volume),
           "PATH": images_path(tmp_path, porch_bin, litestream_bin)}

    def boot():
        for service in ("restore", "raise-ids"):
            done = run(["sh", "-c", service_script(service)], env=env, check=False)
            assert done.returncode == 0, f"{service}: {done.stdout}{done.stderr}"
            yield done.stdout

    said = list(boot())
    highest = max(ack["id"] for ack in acked)
    restored_next = next_message_id(volume / "porch.db")
    assert restored_next >= highest + 1 + MARGIN, (restored_next, highest, said)
    assert "messages" in said[1], said
    assert not (volume / "porch.restored").exists(), "the mark is taken once used"

    # The next boot finds the database on the volume: no restore, no move.
    list(boot())
    assert next_message_id(volume / "porch.db") == restored_next
    check = run([porch_bin, "check", "--db", volume / "porch.db"], check=False)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_boot_with_no_backup_starts_empty_and_moves_nothing(tmp_path, litestream_bin, porch_bin):
    volume = tmp_path / "volume"
    volume.mkdir()
    env = {"PORCH_DATA_DIR": str(volume), "LITESTREAM_REPLICA_URL": f"file://{tmp_path}/none",
           "LITESTREAM_SYNC_INTERVAL": "1s", "LITESTREAM_SOCKET": str(tmp_path / "s"),
           "PATH": images_path(tmp_path, porch_bin, litestream_bin)}
    for service in ("restore", "raise-ids"):
        done = run(["sh", "-c", service_script(service)], env=env, check=False)
        assert done.returncode == 0, f"{service}: {done.stdout}{done.stderr}"
    assert sorted(p.name for p in volume.iterdir()) == []
