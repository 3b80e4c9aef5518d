"""A widget that reads slower than agents write is closed with 1013 ("fell behind, resume"), and
the close frame reaches it (docs/widget-protocol.md, Closing). A browser keeps answering pings
while it works through its backlog; Porch must keep reading those answers until the client's own
close, since dropping a socket with unread bytes makes the kernel reset the connection, which
throws away every frame the client has not read yet, the close among them.
"""

import base64
import json
import os
import socket
import struct
import subprocess
import threading
import time
import urllib.request

from conftest import WAIT, Server, run

ORIGIN = "https://slow.example"
REPLY = "z" * 3990  # agents' replies of about 4 KB: the backlog builds fast
PUSH_FOR = 20.0  # seconds of replies at most; the close comes long before
READ_EVERY = 0.02  # the widget handles a frame every 20 ms


class SlowWidget:
    """A websocket client on a raw socket with a small receive buffer, so the backlog stays on
    the server's side as it would for a slow phone."""

    def __init__(self, addr: str, site: str):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect((host, int(port)))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((
            f"GET /widget/ws?site={site} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Origin: {ORIGIN}\r\n\r\n").encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            self.buf += self.sock.recv(4096)
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        assert b" 101 " in head, head

    def send(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        size = len(payload)
        head = bytes([0x80 | opcode])
        if size < 126:
            head += bytes([0x80 | size])
        else:
            head += bytes([0x80 | 126]) + struct.pack(">H", size)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send_json(self, frame: dict) -> None:
        self.send(1, json.dumps(frame).encode())

    def read(self) -> tuple[int, bytes]:
        """The next frame as (opcode, payload); raises on a reset or the end of the stream."""
        while True:
            if len(self.buf) >= 2:
                size, start = self.buf[1] & 0x7F, 2
                if size == 126 and len(self.buf) >= 4:
                    size, start = struct.unpack(">H", self.buf[2:4])[0], 4
                elif size == 127 and len(self.buf) >= 10:
                    size, start = struct.unpack(">Q", self.buf[2:10])[0], 10
                if size < 126 or start > 2:
                    if len(self.buf) >= start + size:
                        opcode, payload = self.buf[0] & 0x0F, self.buf[start:start + size]
                        self.buf = self.buf[start + size:]
                        return opcode, payload
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the stream ended without a close frame")
            self.buf += data


def test_a_slow_reader_gets_the_1013_close_not_a_reset(porch_bin, processes, tmp_path):
    site = json.loads(run([porch_bin, "--data-dir", tmp_path, "site", "add", "--name", "Slow",
                           "--origin", ORIGIN, "--public-url", "http://127.0.0.1",
                           "--json"]).stdout)["key"]
    run([porch_bin, "--data-dir", tmp_path, "user", "add", "--email", "ada@example.com",
         "--name", "Ada", "--role", "agent"])
    token = run([porch_bin, "--data-dir", tmp_path, "token", "add", "--user",
                 "ada@example.com"]).stdout.strip()
    # Pings every second, so the widget has answers to send while it works through its backlog.
    server = Server(processes.start(
        [porch_bin, "--data-dir", tmp_path, "serve", "--listen", "127.0.0.1:0",
         "--ws-ping-interval", "1s"], stderr=subprocess.PIPE))
    server.wait_ready()

    widget = SlowWidget(server.addr, site)
    widget.send_json({"type": "hello", "v": 1})
    assert json.loads(widget.read()[1])["type"] == "welcome"
    widget.send_json({"type": "message", "client_id": "c1", "body": "hello"})
    assert json.loads(widget.read()[1])["type"] == "ack"
    status, listing = server.get("/api/v1/conversations", token)
    assert status == 200, listing
    conversation = listing["conversations"][0]["id"]

    ending: list = []
    seen: list[int] = []

    def read_slowly():
        try:
            while True:
                opcode, payload = widget.read()
                if opcode == 8:
                    ending.append(("close", struct.unpack(">H", payload[:2])[0]))
                    return
                if opcode == 9:
                    widget.send(10, payload)  # pong, as every browser answers
                    continue
                seen.append(json.loads(payload)["id"])
                time.sleep(READ_EVERY)
        except OSError as err:
            ending.append(("error", repr(err)))

    reader = threading.Thread(target=read_slowly, daemon=True)
    reader.start()
    pushed, started = 0, time.monotonic()
    while not ending and time.monotonic() - started < PUSH_FOR:
        request = urllib.request.Request(
            server.url(f"/api/v1/conversations/{conversation}/messages"),
            data=json.dumps({"body": f"{pushed} {REPLY}"}).encode(), method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=WAIT) as answer:
            assert answer.status == 201
        pushed += 1
    reader.join(timeout=90)

    assert ending == [("close", 1013)], (ending, len(seen), pushed)
    assert 0 < len(seen) < pushed, "the widget fell behind before the close"
    assert seen == sorted(seen), "what arrived came in order"
