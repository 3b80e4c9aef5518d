"""An agent whose machine vanishes from the network without closing anything (a laptop put to
sleep, a phone off the Wi-Fi) stops counting as online: the kernel drops a connection whose peer
has acknowledged nothing for `PORCH_WS_IDLE_TIMEOUT` (docs/configuration.md), so the admin page's
live stream ends once its next keep-alive goes unanswered, and the widget no longer tells visitors
that someone is there (`site.agents_online`, docs/widget-protocol.md).

Loopback cannot lose packets on its own, so the drill runs in a network namespace of its own
(`unshare --net`, as an unprivileged user too) and takes its loopback interface down: the
client's side of the connection goes silent exactly as a sleeping laptop's does. Before the fix,
the connection lived through about 15 minutes of retransmissions.
"""

import http.client
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

from conftest import WAIT

PASSWORD = "correct horse battery staple"
IDLE_TIMEOUT = 3  # seconds, PORCH_WS_IDLE_TIMEOUT for this server
KEEP_ALIVE = 15  # seconds between the live stream's keep-alive comments (admin/sse.rs)


def test_a_vanished_agent_stops_counting_as_online(porch_bin, tmp_path):
    drill = subprocess.run(
        ["unshare", "--map-root-user", "--net", sys.executable, __file__, str(porch_bin),
         str(tmp_path)],
        capture_output=True, text=True, timeout=KEEP_ALIVE + 4 * WAIT,
    )
    assert drill.returncode == 0, drill.stdout + drill.stderr
    seen = json.loads(drill.stdout.strip().splitlines()[-1])
    assert seen["while_connected"] == 1, seen
    assert seen["after_vanishing"] == 0, seen


def _agent_connections(addr: str) -> int:
    connection = http.client.HTTPConnection(addr, timeout=5)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    return int(re.search(r"^porch_agent_connections (\d+)$", text, re.M).group(1))


def _sign_in(addr: str, email: str) -> str:
    """The session cookie of `email`, signed in through the login form."""
    connection = http.client.HTTPConnection(addr, timeout=5)
    connection.request("GET", "/login")
    page = connection.getresponse()
    form_cookie = page.getheader("set-cookie").split(";", 1)[0]
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.read().decode()).group(1)
    body = urlencode({"csrf": csrf, "next": "/inbox", "email": email, "password": PASSWORD})
    connection.request("POST", "/login", body=body, headers={
        "Cookie": form_cookie, "Content-Type": "application/x-www-form-urlencoded"})
    answer = connection.getresponse()
    answer.read()
    assert answer.status == 303, answer.status
    cookies = [c.split(";", 1)[0] for c in answer.headers.get_all("set-cookie")]
    return "; ".join(c for c in cookies if not c.startswith("porch_form="))


def _drill(porch: str, scratch: Path) -> dict:
    """Inside the namespace: an agent's page follows the server, then its network vanishes."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    data = scratch / "data"
    subprocess.run([porch, "--data-dir", data, "user", "add", "--email", "ana@example.com",
                    "--name", "Ana", "--role", "admin", "--password-stdin"],
                   input=PASSWORD, text=True, check=True, capture_output=True)
    server = subprocess.Popen(
        [porch, "--data-dir", data, "serve", "--listen", "127.0.0.1:0",
         "--ws-idle-timeout", f"{IDLE_TIMEOUT}s", "--ws-ping-interval", "1s"],
        stderr=subprocess.PIPE, text=True)
    try:
        for line in server.stderr:
            if match := re.search(r"listening on http://(\S+)", line):
                addr = match.group(1)
                break
        else:
            raise AssertionError("porch never said where it listens")
        # The admin page's live stream, as the browser's EventSource holds it.
        stream = http.client.HTTPConnection(addr, timeout=5)
        stream.request("GET", "/inbox/counts", headers={"Cookie": _sign_in(addr, "ana@example.com")})
        assert stream.getresponse().status == 200
        # The headers come first; the stream counts once it has subscribed, a moment later.
        deadline = time.monotonic() + 5
        while (count := _agent_connections(addr)) != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        seen = {"while_connected": count}
        subprocess.run(["ip", "link", "set", "lo", "down"], check=True)
        # The next keep-alive goes out and is never acknowledged; the kernel gives up on the
        # connection IDLE_TIMEOUT later.
        time.sleep(KEEP_ALIVE + IDLE_TIMEOUT + 3)
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        deadline = time.monotonic() + 5
        while (count := _agent_connections(addr)) != 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        seen["after_vanishing"] = count
        return seen
    finally:
        server.kill()
        server.wait(timeout=WAIT)


if __name__ == "__main__":
    print(json.dumps(_drill(sys.argv[1], Path(sys.argv[2]))))
