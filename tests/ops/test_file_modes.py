"""An attacker's report: on a first start Porch made `data/` 0755 and `porch.db` 0644, so every
user of the machine could read every transcript, address and IP. Porch now creates its files
without access for other users (the group keeps read access, for a backup user), and says so at
start when a database it did not create is readable by everyone.
"""

import os
import stat

from conftest import run


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_porch_creates_its_files_out_of_other_users_reach(porch_bin, processes, tmp_path):
    data = tmp_path / "data"
    # The shell's umask of the test run could hide the bug: open it up for Porch.
    run(["sh", "-c", f'umask 000 && exec "{porch_bin}" --data-dir "{data}" migrate'])
    server = processes.serve(porch_bin, data)
    server.wait_ready()
    assert mode(data) == 0o750, oct(mode(data))
    for name in ["porch.db", "porch.db-wal", "porch.db-shm"]:
        assert mode(data / name) & 0o007 == 0, f"{name}: {oct(mode(data / name))}"
    assert mode(data / "secret.key") == 0o600, oct(mode(data / "secret.key"))
    assert not any("readable by every user" in line for line in server.log), "".join(server.log)
    server.process.terminate()
    server.process.wait(timeout=30)

    # A database copied in (or left by an older version) readable by everyone: named at start.
    (data / "porch.db").chmod(0o644)
    again = processes.serve(porch_bin, data)
    again.wait_ready()
    assert any("porch.db is readable by every user of this machine" in line
               and f"chmod o-rwx {data} {data}/porch.db*" in line for line in again.log), "".join(again.log)
    assert mode(data / "porch.db") == 0o644, "the operator's permissions are left as they are"
