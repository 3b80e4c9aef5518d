# A long conversation at one webhook endpoint (docs/jobs.md, "A conversation's tail"): 300 agent
# replies queued in conversation A to an endpoint answering in 0.3 s, then a visitor message in
# conversation B: how long until the endpoint gets B's event? Loopback only, about a minute.
# Usage: PORCH=path/to/porch python3 run.py   (needs: pip install websockets httpx)
import asyncio, json, os, subprocess, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import httpx, websockets

P = os.environ.get("PORCH", "porch"); D = tempfile.mkdtemp(prefix="porch-long-"); PORT = 19950; HOOK = 19951
ORIGIN = "http://localhost:1"
got = []  # (time, conversation id, message id)

class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(0.3)
        got.append((time.time(), body["data"]["conversation"]["id"], body["data"].get("message", {}).get("id")))
        self.send_response(200); self.end_headers()
    def log_message(self, *a): pass

def sh(*args):
    return subprocess.run([P, *args, "--data-dir", D], check=True, capture_output=True, text=True).stdout

async def visitor(key, text):
    async with websockets.connect(f"ws://127.0.0.1:{PORT}/widget/ws?site={key}", origin=ORIGIN) as ws:
        await ws.send(json.dumps({"type": "hello", "v": 1}))
        welcome = json.loads(await ws.recv())
        await ws.send(json.dumps({"type": "message", "client_id": "c1", "body": text}))
        while True:
            f = json.loads(await ws.recv())
            if f["type"] == "ack":
                return f

async def main():
    sh("user", "add", "--email", "a@example.com", "--name", "Ann", "--role", "admin")
    key = json.loads(sh("site", "add", "--name", "Shop", "--origin", ORIGIN, "--json"))["key"]
    token = sh("token", "add", "--user", "a@example.com").strip().split()[-1]
    srv = ThreadingHTTPServer(("127.0.0.1", HOOK), Hook); threading.Thread(target=srv.serve_forever, daemon=True).start()
    porch = subprocess.Popen([P, "serve", "--data-dir", D, "--listen", f"127.0.0.1:{PORT}", "--allow-private-networks"], stderr=subprocess.DEVNULL)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{PORT}", headers={"Authorization": f"Bearer {token}"}, timeout=10) as api:
            for _ in range(100):
                try:
                    if (await api.get("/readyz")).status_code == 200: break
                except httpx.HTTPError: pass
                await asyncio.sleep(0.1)
            r = await api.post(f"/api/v1/sites/{key}/integrations/webhooks", json={"url": f"http://127.0.0.1:{HOOK}/hook", "events": ["message.created"]})
            assert r.status_code == 201, r.text
            await visitor(key, "hello from A")
            conv_a = (await api.get("/api/v1/conversations")).json()["conversations"][0]["id"]
            for i in range(300):
                r = await api.post(f"/api/v1/conversations/{conv_a}/messages", json={"body": f"reply {i}"})
                assert r.status_code == 201, r.text
            t0 = time.time()
            ack = await visitor(key, "hello from B")
            while True:
                b = [g for g in got if g[1] != conv_a]
                if b: break
                assert time.time() - t0 < 150, "B never arrived"
                await asyncio.sleep(0.05)
            a_before = len([g for g in got if g[1] == conv_a and g[0] <= b[0][0]])
            print(f"B's event reached the endpoint {b[0][0] - t0:.2f} s after its ack; {a_before} of A's 301 had arrived by then")
    finally:
        porch.terminate(); porch.wait(10); srv.shutdown()
        subprocess.run(["rm", "-rf", D])

asyncio.run(main())
