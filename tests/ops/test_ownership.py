"""A data directory restored as root with the `chown` forgotten: `porch serve` (and a command that
takes the data directory's lock), run as the image's uid 10001, names the file it cannot write, its owner and the fix, instead of SQLite's "attempt to
write a readonly database" (Error code 8) from deep in the start, or a bare "Permission denied".
"""

import base64
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import WAIT, run

UID = 10001


@pytest.fixture
def open_dir():
    """A directory every user can reach (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="porch-owner-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def as_other_user(porch: Path, data: Path, command: list) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["setpriv", f"--reuid={UID}", f"--regid={UID}", "--clear-groups", porch,
         "--data-dir", data, *command],
        capture_output=True, text=True, timeout=WAIT)


def serve_as_other_user(porch: Path, data: Path) -> subprocess.CompletedProcess:
    return as_other_user(porch, data, ["serve", "--listen", "127.0.0.1:0"])


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root and setpriv to run porch as another user")
def reachable_copy(porch_bin: Path, open_dir: Path) -> Path:
    """The binary where uid 10001 can run it (the build may sit where it cannot reach)."""
    porch = open_dir / "porch"
    try:
        os.link(porch_bin, porch)
    except OSError:
        shutil.copy2(porch_bin, porch)
    porch.chmod(0o755)
    return porch


def test_files_the_user_cannot_write_are_named_with_owner_and_fix(porch_bin, open_dir):
    porch = reachable_copy(porch_bin, open_dir)
    data = open_dir / "data"
    run([porch, "--data-dir", data, "migrate"])  # as root: root owns everything

    # The directory itself is root's: the lock file cannot be made, and the directory is named.
    (data / "porch.lock").unlink()
    refused = serve_as_other_user(porch, data)
    assert refused.returncode != 0
    assert f"{data} cannot be written by uid {UID} (uid 0" in refused.stderr, refused.stderr
    assert "chown -R 10001:10001" in refused.stderr, refused.stderr

    # The directory is the user's already, but not writable: the mode is the fix, not a chown.
    os.chown(data, UID, UID)
    data.chmod(0o550)
    refused = serve_as_other_user(porch, data)
    assert refused.returncode != 0
    assert (f"{data} cannot be written by uid {UID}, its owner (mode 550): give the owner write "
            "access (chmod u+rwx on this directory)") in refused.stderr, refused.stderr
    data.chmod(0o750)

    # The directory was chowned, the database inside it was not: the server and every command
    # that takes the data directory's lock (raise-ids after a restore, as compose.restore.yml
    # runs it) name it.
    (data / "porch.lock").unlink(missing_ok=True)
    for command in (["serve", "--listen", "127.0.0.1:0"], ["raise-ids", "--by", "10"]):
        refused = as_other_user(porch, data, command)
        assert refused.returncode != 0
        assert f"porch.db cannot be written by uid {UID} (uid 0, mode 640)" in refused.stderr, refused.stderr
        assert "readonly database" not in refused.stderr, refused.stderr

    # The files were chowned, the directory (root's again, as after a copy) was not: SQLite could
    # not create its -wal and -shm in it.
    (data / "secret.key").write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    (data / "secret.key").chmod(0o600)
    for name in ("porch.db", "porch.lock", "secret.key"):
        os.chown(data / name, UID, UID)
    for name in ("porch.db-wal", "porch.db-shm"):
        (data / name).unlink(missing_ok=True)
    os.chown(data, 0, 0)
    data.chmod(0o755)  # as a copy made by root leaves it
    refused = serve_as_other_user(porch, data)
    assert refused.returncode != 0
    assert f"{data} cannot be written by uid {UID} (uid 0" in refused.stderr, refused.stderr
    assert "readonly database" not in refused.stderr, refused.stderr


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root and setpriv to run porch as another user")
def test_a_directory_the_user_cannot_enter_is_named_not_called_empty(porch_bin, open_dir):
    """Commands that only read (user list, check) name the directory that keeps them out, instead of
    saying there is no database, which sends an operator looking for a failed restore."""
    porch = reachable_copy(porch_bin, open_dir)
    data = open_dir / "data"
    run([porch, "--data-dir", data, "migrate"])  # root's: uid 10001 cannot enter it at mode 700
    data.chmod(0o700)
    for command in (["user", "list"], ["site", "list"], ["check"]):
        refused = as_other_user(porch, data, command)
        assert refused.returncode == 1, refused
        assert f"{data} cannot be read by uid {UID} (uid 0, mode 700)" in refused.stderr, refused.stderr
        assert "there is no database" not in refused.stderr, refused.stderr
    refused = as_other_user(porch, data, ["check", "--db", str(data / "porch.db")])
    assert f"{data} cannot be read by uid {UID} (uid 0, mode 700)" in refused.stderr, refused.stderr
    # A directory that does not exist still says so.
    missing = as_other_user(porch, open_dir / "nowhere", ["user", "list"])
    assert missing.returncode == 1
    assert "there is no database at" in missing.stderr, missing.stderr
