"""`porch backup` onto a disk that fills up mid-copy fails with one line saying so and leaves
nothing in the destination: neither the partial copy nor SQLite's journal beside it
(docs/operations.md, "A one-off copy"). The disk is a real one, a 1 MB tmpfs in a mount namespace
of the test's own (`unshare --mount`, as an unprivileged user too); the database is seeded larger
than that.
"""

import subprocess

import pytest

from conftest import WAIT

# Mounts a 1 MB tmpfs on $0, backs the database of data directory $2 up into it with $1, and lists
# what is left there; the backup's exit status is printed after its output.
IN_NAMESPACE = """
mount -t tmpfs -o size=1m tmpfs "$0" || exit 90
"$1" --data-dir "$2" backup "$0/copy.db"; echo "backup exit $?"
echo "left: $(ls -A "$0" | tr '\\n' ' ')"
"""


def test_a_backup_onto_a_full_disk_says_so_and_leaves_nothing(porch_bin, tmp_path):
    data, full = tmp_path / "data", tmp_path / "full"
    full.mkdir()
    seed = subprocess.run(
        [str(porch_bin), "loadtest-search", "--messages", "40000", "--repeat", "1",
         "--scratch", str(data)],
        capture_output=True, text=True, timeout=4 * WAIT,
    )
    assert seed.returncode == 0, seed.stdout + seed.stderr
    (data / "search-bench.db").rename(data / "porch.db")
    assert (data / "porch.db").stat().st_size > 5_000_000, sorted(p.name for p in data.iterdir())
    drill = subprocess.run(
        ["unshare", "--map-root-user", "--mount", "sh", "-c", IN_NAMESPACE, str(full),
         str(porch_bin), str(data)],
        capture_output=True, text=True, timeout=2 * WAIT,
    )
    out = drill.stdout + drill.stderr
    if drill.returncode == 90 or "Operation not permitted" in drill.stderr:
        pytest.skip(f"this machine allows no mount namespace of our own: {out}")
    assert "backup exit 1" in out, out
    assert "the disk is full" in out, out
    left = next(line for line in drill.stdout.splitlines() if line.startswith("left:"))
    assert left.strip() == "left:", out
