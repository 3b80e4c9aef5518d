"""A data directory on a read-only file system (a volume mounted `:ro`, a backup medium) is refused
at start with one line that says so and what to do, not a bare "Read-only file system (os error
30)", and `porch check` still reads the database there (docs/operations.md, "One server per data
directory" and "`porch check` on backups and read-only media").

The mount is real: the data directory bound onto itself read-only, in a mount namespace of the
test's own (`unshare --mount`, as an unprivileged user too).
"""

import subprocess

import pytest

from conftest import WAIT

# Mounts $0 read-only over itself, then runs the server and the check there; each exit status is
# printed after its output.
IN_NAMESPACE = """
mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" || exit 90
"$1" --data-dir "$0" serve --listen 127.0.0.1:0; echo "serve exit $?"
"$1" check --db "$0/porch.db"; echo "check exit $?"
"""


def test_a_read_only_data_directory_is_refused_with_what_to_do(porch_bin, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    subprocess.run([str(porch_bin), "--data-dir", str(data), "migrate"], check=True,
                   capture_output=True, timeout=WAIT)
    drill = subprocess.run(
        ["unshare", "--map-root-user", "--mount", "sh", "-c", IN_NAMESPACE, str(data),
         str(porch_bin)],
        capture_output=True, text=True, timeout=2 * WAIT,
    )
    out = drill.stdout + drill.stderr
    if drill.returncode == 90 or "Operation not permitted" in drill.stderr:
        pytest.skip(f"this machine allows no mount namespace of our own: {out}")
    assert drill.returncode == 0, out
    assert "serve exit 1" in out, out
    assert f"the data directory {data} is on a read-only file system" in out, out
    assert "mount it read-write" in out, out
    assert "porch backup FILE" in out, out
    assert "os error 30" not in out, out
    assert "check exit 0" in out, out
    assert "result          ok" in out, out
