"""A real IMAP4rev1 server for Porch's mail-reply tests: pymap with its in-memory "dict" backend
(one user, demouser / demopass, and an empty INBOX), on 127.0.0.1 at a free port, without TLS.
Prints the port once the server accepts connections, then runs until killed. The test puts
mails in with IMAP APPEND and reads flags back with FETCH, as any mail client would.

Usage: imap_server.py
"""

import socket
import sys
import threading
import time

from pymap.main import main


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def announce_when_listening(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            time.sleep(0.05)
            continue
        print(port, flush=True)
        return
    print("pymap did not start", file=sys.stderr, flush=True)


if __name__ == "__main__":
    port = free_port()
    threading.Thread(target=announce_when_listening, args=(port,), daemon=True).start()
    sys.argv = ["pymap", "--host", "127.0.0.1", "--port", str(port), "--no-tls", "dict"]
    main()
