"""Secrets never reach the log, even at `PORCH_LOG=trace`: an operator's drill found the websocket
library's trace lines writing each frame, with the visitor's token (which reads their conversation)
and the message text. The libraries that log such things are held at `info` beneath any filter.
"""

import asyncio
import http.server
import json
import subprocess
import threading
import time
import urllib.request

from conftest import WAIT, Server, run

ORIGIN = "https://trace.example"


class EchoingFailure(http.server.BaseHTTPRequestHandler):
    """A webhook receiver that fails with a 500 quoting the payload back, as some do."""

    def do_POST(self):  # noqa: N802 (the standard library's name)
        sent = self.rfile.read(int(self.headers["content-length"]))
        self.send_response(500)
        self.send_header("content-type", "text/plain")
        self.end_headers()
        self.wfile.write(b"could not handle: " + sent)

    def log_message(self, *_):
        pass


def test_trace_logs_carry_no_visitor_token_and_no_message_text(porch_bin, processes, tmp_path):
    import websockets

    data = tmp_path / "data"
    site = json.loads(run([porch_bin, "--data-dir", data, "site", "add", "--name", "Trace",
                           "--origin", ORIGIN, "--public-url", "http://127.0.0.1", "--json"]).stdout)["key"]
    subprocess.run([str(porch_bin), "--data-dir", str(data), "user", "add", "--email", "ops@example.org",
                    "--name", "Ops", "--role", "admin", "--password-stdin"], input="pw-long-enough-1\n",
                   capture_output=True, text=True, timeout=WAIT, check=True)
    api_token = run([porch_bin, "--data-dir", data, "token", "add", "--user", "ops@example.org"]).stdout.strip()
    receiver = http.server.HTTPServer(("127.0.0.1", 0), EchoingFailure)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    server = Server(processes.start(
        [porch_bin, "--data-dir", data, "serve", "--listen", "127.0.0.1:0", "--log", "trace",
         "--allow-private-networks"],
        stderr=subprocess.PIPE))
    server.wait_ready()
    hook = urllib.request.Request(
        server.url(f"/api/v1/sites/{site}/integrations/webhooks"), method="POST",
        data=json.dumps({"url": f"http://127.0.0.1:{receiver.server_port}/hook",
                         "events": ["message.created"]}).encode(),
        headers={"authorization": f"Bearer {api_token}", "content-type": "application/json"})
    with urllib.request.urlopen(hook, timeout=WAIT) as answer:
        assert answer.status == 201
    body = "secret-body-7f3a9c"

    async def visit() -> str:
        url = f"ws://{server.addr}/widget/ws?site={site}"
        async with websockets.connect(url, origin=ORIGIN, open_timeout=WAIT) as ws:
            await ws.send(json.dumps({"type": "hello", "v": 1}))
            welcome = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
            await ws.send(json.dumps({"type": "message", "client_id": "t1", "body": body}))
            assert json.loads(await asyncio.wait_for(ws.recv(), WAIT))["type"] == "ack"
            return welcome["token"]

    token = asyncio.run(visit())
    # The webhook's first attempt fails with the payload quoted back in the answer.
    deadline = time.monotonic() + WAIT
    while not any("delivery attempt did not succeed" in line for line in server.log):
        assert time.monotonic() < deadline, "".join(server.log)
        time.sleep(0.05)
    receiver.shutdown()
    time.sleep(0.5)  # the last lines of the exchange are written
    log = "".join(server.log)
    assert 'error="HTTP 500"' in log, "the attempt's line says what failed"
    assert " DEBUG porch" in log, "the filter lets everything of porch through"
    assert token not in log, "the visitor token was logged"
    assert token.split(".")[-1] not in log, "the visitor token's secret part was logged"
    assert body not in log, "the message text was logged"


def test_with_json_logs_the_line_that_says_why_serve_stopped_is_json(porch_bin, tmp_path):
    """A log collector reading `PORCH_LOG_FORMAT=json` got a plain `error: …` line for the one
    event it most needed: why the server did not start."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        serve = [porch_bin, "--data-dir", tmp_path / "data", "serve", "--listen", f"127.0.0.1:{port}"]
        failed = run(serve, env={"PORCH_LOG_FORMAT": "json"}, check=False)
        # With every log line filtered out, the reason still reaches standard error.
        silenced = run(serve, env={"PORCH_LOG_FORMAT": "json", "PORCH_LOG": "off"}, check=False)
    assert silenced.returncode == 1, silenced.stderr
    assert silenced.stderr.strip().splitlines()[-1].startswith("error: "), silenced.stderr
    assert failed.returncode == 1, failed.stderr
    lines = failed.stderr.strip().splitlines()
    parsed = [json.loads(line) for line in lines]  # every line is JSON
    assert parsed[-1]["level"] == "ERROR", parsed[-1]
    assert parsed[-1]["fields"]["message"] == "porch stopped", parsed[-1]
    assert str(port) in parsed[-1]["fields"]["error"], parsed[-1]
