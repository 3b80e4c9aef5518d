"""Image uploads are checked one at a time: a small file can declare millions of pixels, and
decoding it for its thumbnail takes 4 bytes a pixel, so uploads that arrive together must queue
rather than add up (docs/widget-protocol.md, Attachments). Measured on the server process's peak
resident memory (VmHWM), which only a separate process shows.
"""

import asyncio
import json
import struct
import threading
import urllib.request
import zlib

from conftest import WAIT, run

ORIGIN = "https://shop.example"
SIDE = 4000  # 16 million pixels: 64 MB decoded as RGBA, from a file of about 60 KB
DECODED = SIDE * SIDE * 4
UPLOADS = 4


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def blank_png(side: int) -> bytes:
    """A transparent RGBA PNG: tiny on disk, `side`² pixels when decoded."""
    row = b"\0" + b"\0" * (side * 4)
    header = struct.pack(">IIBBBBB", side, side, 8, 6, 0, 0, 0)
    pixels = zlib.compress(row * side, 9)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def peak_rss(pid: int) -> int:
    """The process's peak resident memory so far, in bytes."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_images_uploaded_together_are_decoded_one_at_a_time(porch_bin, processes, tmp_path):
    import websockets

    data = tmp_path / "data"
    site = json.loads(run([porch_bin, "--data-dir", data, "site", "add", "--name", "Shop",
                           "--origin", ORIGIN, "--public-url", "http://127.0.0.1", "--json"]).stdout)["key"]
    server = processes.serve(porch_bin, data)
    server.wait_ready()

    async def token() -> str:
        async with websockets.connect(f"ws://{server.addr}/widget/ws?site={site}", origin=ORIGIN) as ws:
            await ws.send(json.dumps({"type": "hello", "v": 1}))
            return json.loads(await asyncio.wait_for(ws.recv(), WAIT))["token"]

    visitor = asyncio.run(token())
    png = blank_png(SIDE)
    before = peak_rss(server.process.pid)
    answers: list[int] = []

    def upload(i: int) -> None:
        request = urllib.request.Request(
            server.url(f"/widget/attachments?site={site}&name=blank{i}.png"), data=png, method="POST",
            headers={"Authorization": f"Bearer {visitor}", "Origin": ORIGIN})
        with urllib.request.urlopen(request, timeout=WAIT * 4) as response:
            answers.append(response.status)

    threads = [threading.Thread(target=upload, args=(i,)) for i in range(UPLOADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    grew = peak_rss(server.process.pid) - before
    assert answers == [201] * UPLOADS
    # One image decoded at a time peaks near one decoded image (plus the decoder's buffers);
    # all four at once took over four times that before the uploads were queued.
    assert grew < 2 * DECODED, f"peak memory grew by {grew / 1e6:.0f} MB for {UPLOADS} uploads"
