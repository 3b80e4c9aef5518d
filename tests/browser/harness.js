// The browser tests' fixture: a real porch binary on a temp data dir, a host page on another origin,
// Debian's Chromium driven by playwright-core, set up and torn down by `fixture()` for each test file;
// and what people do there (sign in, chat as a visitor). Everything listens on 127.0.0.1 only.
import { before, after } from "node:test";
import { spawn, execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { existsSync, readFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const PORCH_BIN = process.env.PORCH_BIN || path.join(REPO, "target/debug/porch");
export const CHROMIUM = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
export const ARTIFACTS = path.join(REPO, "tests/browser/artifacts");

// Linux gives outgoing connections (and port-0 binds) local ports from ip_local_port_range (32768-60999
// by default). A port picked there and released could be taken by any connection (Chromium's, porch's,
// this process's own) before its server listens on it again, as a CI run once saw, so free ports are
// picked from the 10,000 ports below that range, where the kernel hands nothing out on its own.
const LOW_PORTS = (() => {
  let first = 32768;
  try {
    first = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || first;
  } catch { /* not Linux: the default range */ }
  return { from: Math.max(1024, first - 10000), to: first - 1 };
})();

function tryListen(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/** A port nothing listens on right now, outside the range the kernel hands out on its own. */
export async function freePort() {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = LOW_PORTS.from + Math.floor(Math.random() * (LOW_PORTS.to - LOW_PORTS.from + 1));
    if (await tryListen(port)) return port;
  }
  throw new Error(`no free port in ${LOW_PORTS.from}-${LOW_PORTS.to} after 200 tries`);
}

/** Polls `check` until it returns a truthy value or the deadline passes. */
export async function waitFor(what, check, { timeoutMs = 15000, everyMs = 100 } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ""}`);
}

// Servers still running when this test process exits (a failed before-hook, a timeout) are killed too.
const running = new Set();
process.on("exit", () => { for (const proc of running) proc.kill("SIGKILL"); });

/** A porch server on a fixed loopback port and a temp data dir, which can be stopped and started again. */
export class Porch {
  static async create() {
    if (!existsSync(PORCH_BIN)) {
      throw new Error(`no porch binary at ${PORCH_BIN}: run \`cargo build -p porch\` or set PORCH_BIN`);
    }
    const dataDir = await mkdtemp(path.join(os.tmpdir(), "porch-browser-"));
    return new Porch(dataDir, await freePort());
  }

  constructor(dataDir, port) {
    this.dataDir = dataDir;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
    this.proc = null;
    this.log = "";
    this.token = null;
  }

  /** Runs a porch CLI command on this data dir and returns its stdout. */
  cli(args, { input } = {}) {
    return new Promise((resolve, reject) => {
      const child = execFile(PORCH_BIN, ["--data-dir", this.dataDir, ...args], {
        timeout: 30000,
        env: { ...process.env, PORCH_PUBLIC_URL: this.url },
      }, (err, stdout, stderr) => {
        if (err) reject(new Error(`porch ${args.join(" ")} failed: ${err.message}\n${stderr}`));
        else resolve(stdout);
      });
      // A command that reads no input may exit before its stdin is written, and the write then
      // fails with EPIPE; the exit status and output above are what count, so only that is ignored.
      child.stdin.on("error", (err) => { if (err.code !== "EPIPE") reject(err); });
      child.stdin.end(input ?? "");
    });
  }

  /** Adds a site whose allowed origin is `origin`; returns {key, snippet}. */
  async addSite(name, origin) {
    const out = await this.cli(["site", "add", "--name", name, "--origin", origin, "--json"]);
    return JSON.parse(out);
  }

  /** Adds an admin agent named `name` and keeps an API token for them. */
  async addAgent(email, name) {
    await this.cli(["user", "add", "--email", email, "--name", name, "--role", "admin", "--password-stdin"],
      { input: "correct horse battery staple\n" });
    this.token = (await this.cli(["token", "add", "--user", email])).trim();
  }

  /** Starts `porch serve`; `env` adds environment variables (such as `PORCH_OIDC_*`). */
  async start({ env = {} } = {}) {
    this.log = "";
    const proc = spawn(PORCH_BIN, ["--data-dir", this.dataDir, "serve", "--listen", `127.0.0.1:${this.port}`,
      "--public-url", this.url], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
    this.proc = proc;
    proc.stdout.on("data", (d) => { this.log += d; });
    proc.stderr.on("data", (d) => { this.log += d; });
    running.add(proc);
    proc.exited = new Promise((resolve) => proc.on("exit", (code, signal) => {
      running.delete(proc);
      resolve({ code, signal });
    }));
    let exited = null;
    proc.exited.then((e) => { exited = e; });
    await waitFor("porch /readyz", async () => {
      if (exited) throw new Error(`porch serve exited (${JSON.stringify(exited)}):\n${this.log}`);
      const res = await fetch(`${this.url}/readyz`);
      return res.status === 200;
    }, { timeoutMs: 30000 }).catch((e) => {
      throw new Error(`${e.message}\n--- porch log ---\n${this.log}`);
    });
  }

  /** Stops the server (SIGTERM, then SIGKILL after 10 s). */
  async stop() {
    const proc = this.proc;
    if (!proc) return;
    this.proc = null;
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 10000);
      await proc.exited;
      clearTimeout(timer);
    }
  }

  async dispose() {
    await this.stop();
    await rm(this.dataDir, { recursive: true, force: true });
  }

  /**
   * Turns email on for site `key` (a started server with SMTP, see smtpSink), so that an address a
   * visitor leaves gets replies and the widget asks for one (welcome.site.mails_replies).
   */
  async turnOnEmail(key) {
    if (!this.token) await this.addAgent("mail-admin@example.org", "Mail Admin");
    const { status, body } = await this.api("POST", `/sites/${key}/integrations/email`, {});
    if (status !== 201) throw new Error(`email not turned on: ${status} ${JSON.stringify(body)}`);
  }

  /** Calls the JSON API as the agent; returns {status, body}. */
  async api(method, urlPath, body) {
    const res = await fetch(`${this.url}/api/v1${urlPath}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch { json = text; }
    return { status: res.status, body: json };
  }
}

// Rules a careless or hostile site might have; none of them may reach the widget.
const HOSTILE_CSS = `
  * { color: red !important; font-size: 40px !important; font-family: "Comic Sans MS", cursive !important;
      box-sizing: content-box !important; line-height: 3 !important; letter-spacing: 4px !important; }
  button { display: none !important; }
  div { position: relative !important; transform: translateX(10px) !important; z-index: 0 !important;
        opacity: 0.3 !important; }
  textarea, section, p { display: none !important; }
  [data-porch] { visibility: hidden !important; }
  body { margin: 0; }
`;

/**
 * Serves, on `origin` (from hostOrigin), a host page with `snippet` pasted inline (end of body, or head), with
 * `headers` added to its answer.
 */
export async function hostPage(origin, snippet, headers = {}) {
  const page = (inHead) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Acme host page</title>
<style>${HOSTILE_CSS}</style>
${inHead ? snippet : ""}
</head>
<body>
<h1>Acme Inc.</h1>
<p style="display:block !important">The host page's own content.</p>
<button id="own" type="button" style="display:inline-block !important">Host button</button>
<output id="count">0</output>
<script>
  document.getElementById("own").addEventListener("click", () => {
    const out = document.getElementById("count");
    out.textContent = String(Number(out.textContent) + 1);
  });
  window.hostScriptRan = true;
</script>
${inHead ? "" : snippet}
</body>
</html>`;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://127.0.0.1");
    if (url.pathname !== "/") { res.writeHead(404).end(); return; }
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", ...headers });
    res.end(page(url.searchParams.get("snippet") === "head"));
  });
  const port = Number(new URL(origin).port);
  await new Promise((resolve, reject) => {
    server.on("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  return {
    url: `${origin}/`,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

/**
 * Replaces the fixture's host page with one whose snippet takes its colour from the page's ?color=
 * query, as a site's template would (no query: the default colour). For a fixture's `more`.
 */
export async function hostWithColourQuery(w) {
  const origin = new URL(w.host.url).origin;
  await w.host.close();
  const snippet = w.site.snippet.replace(/"color":"#[0-9a-fA-F]{3,6}"/,
    '"color":new URLSearchParams(location.search).get("color")');
  if (snippet === w.site.snippet) throw new Error("the snippet names no colour");
  w.host = await hostPage(origin, snippet);
}

/** The origin the host page will have; reserved before the site is added so it can be allowed. */
export async function hostOrigin() {
  return `http://127.0.0.1:${await freePort()}`;
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    timeout: 30000,
  });
}

/** Records every request and websocket the page makes to `origin`, and every uncaught page error. */
export function watch(page, origin) {
  const seen = { requests: [], sockets: [], errors: [] };
  page.on("request", (r) => { if (r.url().startsWith(origin)) seen.requests.push(r.url()); });
  page.on("websocket", (ws) => {
    if (ws.url().replace(/^ws/, "http").startsWith(origin)) seen.sockets.push(ws.url());
  });
  page.on("pageerror", (e) => seen.errors.push(e));
  return seen;
}

/**
 * The set-up of a test file, as its `before` and `after` hooks: a porch server on a temp data dir; with
 * `site`, a site of that name allowing a host page on another origin that has the site's snippet pasted in;
 * with `agent` ({email, name}), an admin agent with an API token; then Chromium. The server is started
 * unless `start` is false. `more(world)` is the file's own set-up, run once all that is done (Node 20 runs
 * a file's top-level `before` hooks concurrently, so a second hook could not count on the first).
 * Returns the object the `before` hook fills in: {porch, site, host, browser}. A test may set `host`
 * itself; the `after` hook closes whatever is there.
 */
export function fixture({ site, agent, start = true, email = false } = {}, more = async () => {}) {
  const world = { porch: null, site: null, host: null, browser: null, smtp: null };
  before(async () => {
    world.porch = await Porch.create();
    const origin = site ? await hostOrigin() : null;
    if (site) world.site = await world.porch.addSite(site, origin);
    if (agent) await world.porch.addAgent(agent.email, agent.name);
    if (email) world.smtp = await smtpSink();
    if (start) await world.porch.start({ env: world.smtp ? world.smtp.env : {} });
    if (email && site) await world.porch.turnOnEmail(world.site.key);
    if (site) world.host = await hostPage(origin, world.site.snippet);
    world.browser = await launchBrowser();
    await more(world);
  });
  after(async () => {
    await world.browser?.close();
    await world.host?.close();
    await world.porch?.dispose();
    await world.smtp?.close();
  });
  return world;
}

/** The Python of the delivery tests' venv (aiosmtpd, pymap): the one scripts/test installs into. */
export const PYTHON = path.join(REPO, "tests/deliveries/.venv/bin/python");

/**
 * Starts a Python test server of tests/deliveries (`script`, which prints its port first) with that
 * directory's venv; returns {proc, port}. It is killed when this test process exits, if not before.
 */
export async function pythonServer(script, args = []) {
  const proc = spawn(PYTHON,
    [path.join(REPO, "tests/deliveries", script), ...args], { stdio: ["ignore", "pipe", "inherit"] });
  running.add(proc);
  proc.on("exit", () => running.delete(proc));
  const port = await new Promise((resolve) => proc.stdout.once("data", (d) => resolve(Number(String(d).trim()))));
  return { proc, port };
}

/**
 * The SMTP server of the Rust tests (tests/deliveries/smtp_sink.py, aiosmtpd), writing each mail it
 * accepts into a temp dir as NNNN.json. `env` is what points porch at it, `mails()` reads what it
 * received (in order) and `close()` stops it and removes the dir.
 */
export async function smtpSink() {
  const dir = await mkdtemp(path.join(os.tmpdir(), "porch-mail-"));
  const { proc, port } = await pythonServer("smtp_sink.py", [dir]);
  return {
    proc, port, dir,
    env: { PORCH_SMTP_URL: `smtp://127.0.0.1:${port}`, PORCH_MAIL_FROM: "Porch <chat@porch.test>" },
    async mails() {
      const names = (await readdir(dir)).filter((n) => n.endsWith(".json")).sort();
      return Promise.all(names.map(async (n) => JSON.parse(await readFile(path.join(dir, n), "utf8"))));
    },
    async close() {
      proc.kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export const PASSWORD = "correct horse battery staple";

/** The setup token porch logs at start-up on a fresh install. */
export async function setupToken(porch) {
  return waitFor("the setup token in the server log", () => {
    const match = porch.log.match(/setup token ([A-Za-z0-9_-]{20,})/);
    return match && match[1];
  });
}

/** Creates the first admin, Ana <ana@example.com>, on /setup as a newcomer does; waits for the new-site form. */
export async function setUpFirstAdmin(page, porch) {
  await page.goto(`${porch.url}/setup`);
  await page.getByLabel("Setup token").fill(await setupToken(porch));
  await page.getByLabel("Your name").fill("Ana");
  await page.getByLabel("Email").fill("ana@example.com");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Create admin account" }).click();
  await page.waitForURL(/\/sites\/new/);
}

/** Signs in on `page`; waits for the page after the redirect. */
export async function signIn(page, porch, email, password = PASSWORD) {
  await page.goto(`${porch.url}/login`);
  // Someone already signed in is sent on from /login: sign them out first.
  if (!new URL(page.url()).pathname.startsWith("/login")) {
    await Promise.all([page.waitForURL(/\/login/),
      page.getByRole("button", { name: "Sign out" }).click()]);
  }
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith("/login")),
    page.getByRole("button", { name: "Sign in" }).click()]);
}

/** A desktop-sized page signed in as the agent with `email`, in a context of its own. */
export async function agentPage(browser, porch, email) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, email);
  return { context, page };
}

/**
 * Opens, from the inbox, the conversation whose row shows `text`, and waits until its page's live
 * stream follows the hub (the counts arrive then): from that moment nothing is missed. Returns its id.
 */
export async function openConversation(page, porch, text) {
  await page.goto(`${porch.url}/inbox`);
  await page.locator("#conversations li", { hasText: text }).locator("a").click();
  await page.waitForURL(/\/conversations\/\d+$/);
  await page.locator("body[data-needs]").waitFor({ state: "attached" });
  return Number(new URL(page.url()).pathname.split("/").at(-1));
}

/** Saves a full-page screenshot under tests/browser/artifacts/. */
export async function snap(page, name) {
  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Opens the host page in a fresh context and returns a visitor who can send messages. */
export async function visitor(browser, hostUrl, { locale } = {}) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 760 }, ...(locale && { locale }) });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  await page.goto(hostUrl);
  await page.locator("[data-porch=launcher]").click();
  await waitFor("the widget to connect", async () =>
    (await page.locator("[data-porch=status]").getAttribute("data-state")) === "connected");
  return {
    page,
    context,
    async say(text) {
      const sent = await page.locator("[data-porch=message][data-author=visitor][data-status=sent]").count();
      await page.locator("[data-porch=input]").fill(text);
      await page.locator("[data-porch=input]").press("Enter");
      await waitFor("the message to be acknowledged", async () =>
        (await page.locator("[data-porch=message][data-author=visitor][data-status=sent]").count()) > sent);
    },
  };
}
