// The panel's side of docs/widget-protocol.md, against a scripted fake server: Playwright answers the
// widget's requests and its websocket itself, and drives the page's clock, so the timing rules (backoff,
// retry_after_ms, typing expiry) are checked exactly. The panel's files are what a real porch serves
// (fetched once, before the tests): its script is put together from parts and compacted at start-up.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { Porch, REPO, launchBrowser, waitFor } from "./harness.js";

const ASSETS = path.join(REPO, "server/assets/widget");
const served = {}; // panel.js and panel.css, as served
const PORCH = "http://porch.test";
const SHOP = "http://shop.test/";
const SITE = "s_0123456789abcdef";
const NONCE = "r4nd0mN0nce";
const WELCOME_SITE = { name: "Shop", greeting: "Hello there!", color: "#2563eb", position: "right" };

let browser;
before(async () => {
  browser = await launchBrowser();
  const porch = await Porch.create();
  try {
    await porch.start();
    for (const name of ["panel.js", "panel.css"]) {
      const res = await fetch(`${porch.url}/widget/${name}`);
      if (res.status !== 200) throw new Error(`${name}: ${res.status}`);
      served[name] = await res.text();
    }
  } finally {
    await porch.dispose();
  }
});
after(async () => { await browser?.close(); });

/**
 * Opens the shop page with the widget and a fake Porch. `script.hello(conn, frame)`,
 * `script.message(conn, frame, fake)` and `script.ping(…)` may answer frames; by default hello gets a welcome,
 * a message an ack and a ping a pong.
 */
// `stylesAfter`, a promise, holds the panel's stylesheet back until it settles; `shown: false` does not wait
// for the panel to show.
async function open(script = {}, { csp, stylesAfter, shown = true } = {}) {
  const launcher = await readFile(path.join(ASSETS, "launcher.js"), "utf8");
  const config = { url: PORCH, site: SITE, color: "#2563eb", position: "right", label: "Chat with us" };
  const nonce = csp ? ` nonce="${NONCE}"` : "";
  const snippet = `<script${nonce}>${launcher}(${JSON.stringify(config)});</script>`;
  const context = await browser.newContext();
  await context.route(SHOP, (r) => r.fulfill({ contentType: "text/html",
    headers: csp ? { "content-security-policy": csp } : {},
    body: `<!doctype html><meta charset=utf-8><title>Shop</title><h1>Shop</h1>${snippet}` }));
  await context.route(`${PORCH}/widget/*`, async (r) => {
    const name = new URL(r.request().url()).pathname.split("/").pop();
    if (name.endsWith(".css")) await stylesAfter;
    r.fulfill({ contentType: name.endsWith(".js") ? "text/javascript" : "text/css",
      body: served[name] });
  });
  const fake = { conns: [], nextId: 100 };
  fake.welcome = (conn, extra = {}) => conn.send({ type: "welcome", v: 1, token: "vt1.fake", site: WELCOME_SITE,
    messages: [], ...extra });
  fake.ack = (conn, f) => conn.send({ type: "ack", client_id: f.client_id, id: fake.nextId++, at: Date.now() });
  fake.sent = () => fake.conns.flatMap((c) => c.frames.filter((f) => f.type === "message"));
  await context.routeWebSocket(/^ws:\/\/porch\.test\/widget\/ws/, (ws) => {
    const conn = { ws, url: ws.url(), frames: [], send: (f) => ws.send(JSON.stringify(f)),
      close: (code) => ws.close({ code, reason: "" }), closed: false };
    ws.onClose(() => { conn.closed = true; });
    fake.conns.push(conn);
    ws.onMessage((data) => {
      const f = JSON.parse(data);
      conn.frames.push(f);
      if (f.type === "hello") (script.hello || ((c) => fake.welcome(c)))(conn, f, fake);
      if (f.type === "message") (script.message || fake.ack)(conn, f, fake);
      if (f.type === "ping") (script.ping || ((c) => c.send({ type: "pong" })))(conn, f, fake);
    });
  });
  const page = await context.newPage();
  page.setDefaultTimeout(10000);
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  page.on("console", (m) => { if (/Content Security Policy/i.test(m.text())) errors.push(m.text()); });
  await page.clock.install();
  await page.goto(SHOP);
  await page.locator("[data-porch=launcher]").click();
  if (shown) await page.locator("[data-porch=panel]").waitFor({ state: "visible" });
  // From here the page's time moves only when a test moves it, so timings are exact on a slow machine.
  await page.clock.pauseAt(await page.evaluate(() => Date.now() + 1000));
  const ui = {
    page, fake, errors,
    input: page.locator("[data-porch=input]"),
    status: page.locator("[data-porch=status]"),
    error: page.locator("[data-porch=error]"),
    mine: page.locator("[data-porch=message][data-author=visitor]"),
    theirs: page.locator("[data-porch=message][data-author=agent]"),
    async say(text) {
      await ui.input.fill(text);
      await ui.input.press("Enter");
    },
    async done() {
      assert.deepEqual(errors, [], "uncaught errors in the page");
      await context.close();
    },
  };
  return ui;
}

test("hello carries the stored token and last_id 0; the welcome token is stored", { timeout: 30000 }, async () => {
  const ui = await open();
  await waitFor("hello", () => ui.fake.conns[0]?.frames.length);
  const conn = ui.fake.conns[0];
  assert.equal(conn.url, `ws://porch.test/widget/ws?site=${SITE}`);
  const [hello] = conn.frames;
  assert.equal(hello.type, "hello");
  assert.equal(hello.v, 1);
  assert.equal(hello.last_id, 0);
  assert.equal(hello.token, undefined, "a new visitor sends no token");
  assert.equal(hello.page, SHOP);
  await ui.page.locator("[data-porch=greeting]", { hasText: "Hello there!" }).waitFor();
  assert.equal(await ui.page.locator("[data-porch=panel] h2").innerText(), "Shop");
  assert.equal(await ui.page.evaluate((k) => localStorage.getItem(k), `porch:${SITE}:token`), "vt1.fake");
  assert.equal(await ui.page.evaluate((k) => sessionStorage.getItem(k), `porch:${SITE}:open`), "open");
  await ui.done();
});

test("Enter sends, Shift+Enter starts a new line, blank input sends nothing", { timeout: 30000 }, async () => {
  const ui = await open();
  await waitFor("welcome", async () => (await ui.status.getAttribute("data-state")) === "connected");
  await ui.input.press("Enter");
  await ui.input.fill("first line");
  await ui.input.press("Shift+Enter");
  await ui.input.pressSequentially("second line");
  await ui.input.press("Enter");
  await ui.mine.and(ui.page.locator("[data-status=sent]")).waitFor();
  const sent = ui.fake.sent();
  assert.equal(sent.length, 1);
  assert.equal(sent[0].body, "first line\nsecond line");
  assert.match(sent[0].client_id, /^[A-Za-z0-9_-]{1,64}$/);
  await ui.done();
});

test("the limit counts characters as the server does: 2,500 emoji go whole, 4,001 letters do not",
  { timeout: 30000 }, async () => {
    const ui = await open();
    await waitFor("welcome", async () => (await ui.status.getAttribute("data-state")) === "connected");
    const emoji = "\u{1F600}".repeat(2500); // 5,000 UTF-16 units, 2,500 characters
    await ui.input.fill(emoji);
    assert.equal(await ui.page.locator(".counter").evaluate((el) => el.textContent), "2500 / 4000");
    // White space at either end is trimmed before the server counts, so not counted here either
    // (3,995 letters and 8 spaces read "4003 / 4000" and were sent all the same).
    await ui.input.fill(`  ${"a".repeat(3995)}      `);
    assert.equal(await ui.page.locator(".counter").evaluate((el) => el.textContent), "3995 / 4000");
    await ui.input.fill(emoji);
    await ui.input.press("Enter");
    await ui.mine.and(ui.page.locator("[data-status=sent]")).waitFor();
    assert.equal(ui.fake.sent()[0].body, emoji);
    await ui.input.fill("x".repeat(4001));
    await ui.input.press("Enter");
    await ui.error.waitFor({ state: "visible" });
    assert.equal(ui.fake.sent().length, 1, "too long: not sent");
    // Shortened and sent, the refusal no longer applies and goes.
    await ui.input.press("Backspace");
    await ui.input.press("Enter");
    await waitFor("the shortened message sent", async () => ui.fake.sent().length === 2);
    await ui.error.waitFor({ state: "hidden" });
    await ui.done();
  });

/** What screen readers get of the error line (all but its aria-hidden countdown), and whether it is
 * still the node first seen there (an alert rewritten is read again, cutting speech off). */
const spokenPart = (error) => error.evaluate((el) => {
  const said = [...el.childNodes].filter((n) => !(n.nodeType === 1 && n.getAttribute("aria-hidden") === "true"));
  el.__said ??= said[0];
  return { text: said.map((n) => n.textContent).join(""), same: said[0] === el.__said };
});

test("rate_limited: 'Please wait N s', then the same client_id is resent after retry_after_ms",
  { timeout: 30000 }, async () => {
    let refused = false;
    const ui = await open({
      message(conn, f, fake) {
        if (refused) { fake.ack(conn, f); return; }
        refused = true;
        conn.send({ type: "error", code: "rate_limited", message: "You are sending messages too fast.",
          retry_after_ms: 3000, client_id: f.client_id });
      },
    });
    await ui.say("Hello?");
    await ui.error.waitFor({ state: "visible" });
    assert.equal(await ui.error.innerText(), "You are sending messages too fast. Please wait 3 s.");
    assert.equal(await ui.mine.getAttribute("data-status"), "sending");
    // The alert is read once: what screen readers get (all but the aria-hidden countdown) is one node
    // that the ticks leave alone.
    const spoken = () => spokenPart(ui.error);
    assert.deepEqual(await spoken(), { text: "You are sending messages too fast. ", same: true });
    await ui.page.clock.runFor(1000);
    assert.match(await ui.error.innerText(), /Please wait 2 s\./);
    assert.deepEqual(await spoken(), { text: "You are sending messages too fast. ", same: true });
    await ui.page.clock.runFor(1500);
    assert.equal(ui.fake.sent().length, 1, "resent before retry_after_ms");
    await ui.page.clock.runFor(600);
    await ui.mine.and(ui.page.locator("[data-status=sent]")).waitFor();
    const sent = ui.fake.sent();
    assert.equal(sent.length, 2);
    assert.equal(sent[1].client_id, sent[0].client_id);
    await ui.error.waitFor({ state: "hidden" });
    await ui.done();
  });

for (const code of ["site_busy", "too_many_conversations", "busy", "unavailable"]) {
  test(`${code} is waited out and resent like rate_limited`, { timeout: 30000 }, async () => {
    let refused = false;
    const ui = await open({
      message(conn, f, fake) {
        if (refused) { fake.ack(conn, f); return; }
        refused = true;
        conn.send({ type: "error", code, message: "Busy.", retry_after_ms: 1500, client_id: f.client_id });
      },
    });
    await ui.say("Hi");
    await ui.error.waitFor({ state: "visible" });
    assert.match(await ui.error.innerText(), /Please wait 2 s\./);
    await ui.page.clock.runFor(1600);
    await ui.mine.and(ui.page.locator("[data-status=sent]")).waitFor();
    assert.equal(new Set(ui.fake.sent().map((f) => f.client_id)).size, 1);
    await ui.done();
  });
}

test("invalid_message marks the message failed and stops resending it", { timeout: 30000 }, async () => {
  const ui = await open({
    message(conn, f) {
      conn.send({ type: "error", code: "invalid_message", message: "That message is empty or too long.",
        client_id: f.client_id });
    },
  });
  await ui.say("x");
  await ui.mine.and(ui.page.locator("[data-status=failed]")).waitFor();
  assert.equal(await ui.error.innerText(), "That message is empty or too long.");
  assert.equal(await ui.page.evaluate((k) => localStorage.getItem(k), `porch:${SITE}:pending`), null);
  await ui.done();
});

test("a message that was not sent keeps its place when later messages come", { timeout: 30000 }, async () => {
  const ui = await open({
    message(conn, f, fake) {
      if (f.body !== "bad\u0001") return fake.ack(conn, f);
      conn.send({ type: "error", code: "invalid_message", message: "Not allowed.", client_id: f.client_id });
    },
  });
  const sent = (n) => waitFor(`${n} sent`, async () =>
    (await ui.mine.and(ui.page.locator("[data-status=sent]")).count()) === n);
  await ui.say("first");
  await sent(1);
  await ui.say("bad\u0001");
  await ui.mine.and(ui.page.locator("[data-status=failed]")).waitFor();
  ui.fake.conns[0].send({ type: "message", id: ui.fake.nextId++, conversation_id: 7, author: "agent",
    agent_name: "Ana", client_id: null, body: "A reply", at: Date.now() });
  await ui.theirs.waitFor();
  await ui.say("next");
  await sent(2);
  const texts = await ui.page.locator("[data-porch=message] .bubble").allInnerTexts();
  assert.deepEqual(texts, ["first", "bad\u0001", "A reply", "next"], "the failed one did not sink below later ones");
  await ui.done();
});

// docs/widget-protocol.md, "ping": a visitor waiting for a reply sends nothing, so a connection that died
// without a word would never be found out. The panel pings after 25 s of quiet and gives the socket up when
// no pong (nothing at all) comes within 10 s; the reply it missed comes with the next welcome.
test("a quiet connection is pinged after 25 s, and given up without an answer in 10 s", { timeout: 60000 },
  async () => {
    const reply = { type: "message", id: 142, conversation_id: 7, author: "agent", agent_name: "Ana",
      client_id: null, body: "Sent while the line was dead", at: 1764470000123 };
    const ui = await open({
      hello(conn, f, fake) { fake.welcome(conn, { messages: fake.conns.length === 1 ? [] : [reply] }); },
      // The first connection has died without a word: its pings go nowhere.
      ping(conn, f, fake) { if (conn !== fake.conns[0]) conn.send({ type: "pong" }); },
    });
    const pings = (conn) => conn.frames.filter((f) => f.type === "ping").length;
    const state = () => ui.status.getAttribute("data-state");
    await ui.say("Where is my parcel?");
    await ui.mine.and(ui.page.locator("[data-status=sent]")).waitFor(); // heard at this moment
    await ui.page.clock.runFor(24900);
    assert.equal(pings(ui.fake.conns[0]), 0, "no ping before 25 s of quiet");
    await ui.page.clock.runFor(200);
    await waitFor("a ping", () => pings(ui.fake.conns[0]) === 1);
    await ui.page.clock.runFor(9800);
    assert.equal(await state(), "connected", "10 s to answer");
    await ui.page.clock.runFor(300);
    await waitFor("given up", async () => (await state()) === "waiting");
    await ui.page.clock.runFor(1100);
    await ui.theirs.filter({ hasText: "Sent while the line was dead" }).waitFor();
    assert.equal(ui.fake.conns.length, 2);

    // A live connection answers: pinged after each 25 s of quiet, and kept.
    await ui.page.clock.runFor(25100);
    await waitFor("the new connection pinged", () => pings(ui.fake.conns[1]) === 1);
    await ui.page.clock.runFor(25100);
    await waitFor("pinged again", () => pings(ui.fake.conns[1]) === 2);
    assert.equal(ui.fake.conns.length, 2, "a pong keeps the connection");
    assert.equal(await state(), "connected");
    await ui.done();
  });

test("after close code 1008 the error shows and the widget never reconnects", { timeout: 30000 }, async () => {
  const ui = await open({
    hello(conn) {
      conn.send({ type: "error", code: "origin_not_allowed", message: "This website may not use this chat." });
      conn.close(1008);
    },
  });
  await waitFor("stopped", async () => (await ui.status.getAttribute("data-state")) === "stopped");
  assert.equal(await ui.error.innerText(), "This website may not use this chat.");
  assert.equal(await ui.input.isDisabled(), true);
  // Focus was in the message box, now disabled: it is on Close chat, not on the host page's body.
  assert.equal(await ui.page.locator("[data-porch=panel] .close").evaluate((el) => el === el.getRootNode().activeElement),
    true);
  await ui.page.clock.runFor(120000);
  assert.equal(ui.fake.conns.length, 1, "reconnected after 1008");
  await ui.done();
});

test("a chat stopped before its styles arrive opens with focus on Close chat", { timeout: 30000 }, async () => {
  let closed;
  const stylesAfter = new Promise((resolve) => { closed = resolve; });
  const ui = await open({
    hello(conn) {
      conn.send({ type: "error", code: "origin_not_allowed", message: "This website may not use this chat." });
      conn.close(1008);
      setTimeout(closed, 200);
    },
  }, { stylesAfter });
  assert.equal(await ui.status.getAttribute("data-state"), "stopped");
  assert.equal(await ui.page.locator("[data-porch=panel] .close").evaluate((el) => el === el.getRootNode().activeElement),
    true);
  await ui.done();
});

test("reconnects after 1 s, 2 s, 4 s … (with jitter, capped at 30 s) and resumes from last_id",
  { timeout: 60000 }, async () => {
    const history = [{ type: "message", id: 41, conversation_id: 7, author: "agent", agent_name: "Ana",
      client_id: null, body: "Welcome back", at: 1764470000123 }];
    const ui = await open({
      // The first connection works; every later one is closed at once until the eighth.
      hello(conn, f, fake) {
        const n = fake.conns.length;
        if (n === 1 || n >= 8) fake.welcome(conn, { messages: n === 1 ? history : [] });
        else conn.close(1011);
      },
    });
    await ui.theirs.waitFor();
    ui.fake.conns[0].close(1012); // server restarting
    await waitFor("reconnect countdown", async () => /Reconnecting in 1 s…/.test(await ui.status.innerText()));
    // Attempt k waits between 3/4 and all of min(30 s, 2^k s).
    for (const [k, full] of [[1, 1000], [2, 2000], [3, 4000], [4, 8000], [5, 16000], [6, 30000], [7, 30000]]) {
      // The timer starts when the page sees the close: wait for that before moving the clock.
      await waitFor(`countdown ${k}`, async () => (await ui.status.getAttribute("data-state")) === "waiting");
      const before = ui.fake.conns.length;
      await ui.page.clock.runFor(full * 0.75 - 50);
      assert.equal(ui.fake.conns.length, before, `attempt ${k} came before ${full * 0.75} ms`);
      await ui.page.clock.runFor(full * 0.25 + 100);
      await waitFor(`attempt ${k}`, () => ui.fake.conns.length === before + 1);
    }
    await waitFor("connected", async () => (await ui.status.getAttribute("data-state")) === "connected");
    const last = ui.fake.conns.at(-1).frames[0];
    assert.equal(last.last_id, 41);
    assert.equal(last.token, "vt1.fake");
    assert.equal(await ui.theirs.count(), 1);
    await ui.done();
  });

test("unacked messages are resent with the same client_id after a reconnect and shown once",
  { timeout: 30000 }, async () => {
    const ui = await open({
      message(conn, f, fake) {
        // The first connection stores nothing and drops; the second acks.
        if (fake.conns.length === 1) conn.close(1011);
        else fake.ack(conn, f);
      },
    });
    await ui.say("Are you there?");
    await waitFor("drop", () => ui.fake.conns.length === 1 && ui.fake.sent().length === 1);
    await waitFor("countdown", async () => (await ui.status.getAttribute("data-state")) === "waiting");
    assert.equal(await ui.mine.getAttribute("data-status"), "sending");
    await ui.page.clock.runFor(1100);
    await ui.mine.and(ui.page.locator("[data-status=sent]")).waitFor();
    const sent = ui.fake.sent();
    assert.equal(sent.length, 2);
    assert.equal(sent[1].client_id, sent[0].client_id);
    assert.equal(await ui.mine.count(), 1);
    await ui.done();
  });

test("pushed messages already shown are ignored; another tab's visitor message shows once",
  { timeout: 30000 }, async () => {
    const ui = await open({
      message(conn, f, fake) {
        // The server pushes this visitor's message (as to another tab) before the ack.
        const id = fake.nextId++;
        conn.send({ type: "message", id, conversation_id: 7, author: "visitor", agent_name: null,
          client_id: f.client_id, body: f.body, at: 1764470000500 });
        conn.send({ type: "ack", client_id: f.client_id, id, at: 1764470000500 });
      },
    });
    await waitFor("connected", async () => (await ui.status.getAttribute("data-state")) === "connected");
    const conn = ui.fake.conns[0];
    const agent = { type: "message", id: 50, conversation_id: 7, author: "agent", agent_name: "Ana",
      client_id: null, body: "Hi!", at: 1764470000000 };
    conn.send(agent);
    conn.send(agent);
    conn.send({ type: "message", id: 51, conversation_id: 7, author: "visitor", agent_name: null,
      client_id: "from-another-tab", body: "Typed in another tab", at: 1764470000100 });
    conn.send({ type: "message", id: 51, conversation_id: 7, author: "visitor", agent_name: null,
      client_id: "from-another-tab", body: "Typed in another tab", at: 1764470000100 });
    await ui.mine.filter({ hasText: "Typed in another tab" }).waitFor();
    await ui.say("Mine");
    await ui.mine.filter({ hasText: "Mine" }).and(ui.page.locator("[data-status=sent]")).waitFor();
    assert.deepEqual(await ui.page.locator("[data-porch=message] .bubble").allInnerTexts(),
      ["Hi!", "Typed in another tab", "Mine"]);
    await ui.done();
  });

test("the agent typing indicator expires after 6 s unless repeated", { timeout: 30000 }, async () => {
  const ui = await open();
  await waitFor("connected", async () => (await ui.status.getAttribute("data-state")) === "connected");
  const typing = ui.page.locator("[data-porch=typing]");
  ui.fake.conns[0].send({ type: "typing", agent_name: "Ana", active: true });
  await typing.waitFor({ state: "visible" });
  await ui.page.clock.runFor(4000);
  ui.fake.conns[0].send({ type: "typing", agent_name: "Ana", active: true });
  await ui.page.clock.runFor(4000);
  assert.equal(await typing.isVisible(), true, "a repeated typing frame did not extend the indicator");
  await ui.page.clock.runFor(2100);
  await typing.waitFor({ state: "hidden" });
  ui.fake.conns[0].send({ type: "typing", agent_name: "Ana", active: true });
  await typing.waitFor({ state: "visible" });
  ui.fake.conns[0].send({ type: "typing", agent_name: "Ana", active: false });
  await typing.waitFor({ state: "hidden" });
  await ui.done();
});

test("a message waiting after a reload is shown at once and resent with its client_id",
  { timeout: 30000 }, async () => {
    const ui = await open({ message() { /* never acked */ } });
    await ui.say("Lost in the reload?");
    await waitFor("sent once", () => ui.fake.sent().length === 1);
    const cid = ui.fake.sent()[0].client_id;
    await ui.page.reload();
    await ui.mine.filter({ hasText: "Lost in the reload?" }).waitFor();
    await waitFor("resent", () => ui.fake.sent().length === 2);
    assert.equal(ui.fake.sent()[1].client_id, cid);
    assert.equal(await ui.mine.count(), 1);
    await ui.done();
  });

test("works on a page with a strict Content-Security-Policy as docs/widget.md describes", { timeout: 30000 },
  async () => {
    const csp = [`default-src 'none'`, `script-src 'nonce-${NONCE}' ${PORCH}`, `style-src ${PORCH}`,
      `connect-src ws://porch.test`, `img-src blob:`].join("; ");
    const ui = await open({}, { csp });
    await ui.page.locator("[data-porch=greeting]").waitFor();
    await ui.say("Hello under CSP");
    await ui.mine.and(ui.page.locator("[data-status=sent]")).waitFor();
    // The launcher's and the panel's styles applied (a blocked sheet would leave the defaults).
    const look = await ui.page.locator("[data-porch=launcher]").evaluate((el) => getComputedStyle(el).position);
    assert.equal(look, "fixed");
    const radius = await ui.page.locator("[data-porch=panel]").evaluate((el) => getComputedStyle(el).borderRadius);
    assert.equal(radius, "16px");
    await ui.done();
  });

test("a CSP without Porch in style-src gets the unavailable note, not an unstyled panel out of sight",
  { timeout: 30000 }, async () => {
    const csp = [`default-src 'none'`, `script-src 'nonce-${NONCE}' ${PORCH}`, `connect-src ws://porch.test`].join("; ");
    const ui = await open({}, { csp, shown: false });
    const note = ui.page.locator("[data-porch=unavailable]");
    await note.waitFor();
    assert.equal(await note.textContent(), "Chat is unavailable, try again");
    const panel = ui.page.locator("[data-porch=panel]");
    assert.equal(await panel.isVisible(), false);
    const launcher = ui.page.locator("[data-porch=launcher]");
    assert.equal(await launcher.getAttribute("aria-expanded"), "false");
    assert.equal(await ui.page.evaluate(() => document.getElementById("porch-chat").shadowRoot.activeElement?.dataset.porch),
      "launcher", "focus stays on the button");
    // Nothing stays connected for a panel nobody can see; a second click says the same again.
    await waitFor("the websocket closed", () => ui.fake.conns.every((c) => c.closed));
    await launcher.click();
    assert.equal(await note.isVisible(), true);
    assert.equal(await panel.isVisible(), false);
    assert.ok(ui.errors.some((e) => /style-src/.test(e)), "the console says why");
    await ui.page.context().close();
  });

test("a reply that arrives while the panel is closed marks the launcher unread", { timeout: 30000 }, async () => {
  const ui = await open();
  await waitFor("connected", async () => (await ui.status.getAttribute("data-state")) === "connected");
  const launcher = ui.page.locator("[data-porch=launcher]");
  await ui.page.locator("[data-porch=panel] .close").click();
  await ui.page.locator("[data-porch=panel]").waitFor({ state: "hidden" });
  assert.equal(await ui.page.evaluate((k) => sessionStorage.getItem(k), `porch:${SITE}:open`), "closed");
  ui.fake.conns[0].send({ type: "message", id: 60, conversation_id: 7, author: "agent", agent_name: "Ana",
    client_id: null, body: "Still there?", at: 1764470000000 });
  await waitFor("unread mark", async () => (await launcher.getAttribute("data-unread")) !== null);
  await launcher.click();
  await ui.theirs.filter({ hasText: "Still there?" }).waitFor();
  assert.equal(await launcher.getAttribute("data-unread"), null);
  assert.equal(ui.fake.conns.length, 1, "closing the panel must not drop the connection");
  await ui.done();
});

test("links in messages: http(s) only, in a new tab, a closing bracket only when the address opened one, none past a direction control",
  { timeout: 30000 }, async () => {
    const ui = await open();
    await waitFor("connected", async () => (await ui.status.getAttribute("data-state")) === "connected");
    ui.fake.conns[0].send({ type: "message", id: 61, conversation_id: 7, author: "agent", agent_name: "Ana",
      client_id: null, at: 1764470000000,
      body: "See https://en.wikipedia.org/wiki/Foo_(bar). Or (https://example.com/x), not javascript:alert(1)" +
        " nor https://evil.example/\u202etxt.exe nor https://support.acme.com@evil.example/reset" });
    const reply = ui.theirs.filter({ hasText: "See " });
    await reply.waitFor();
    const links = await reply.locator("a").evaluateAll((as) => as.map((a) => [a.getAttribute("href"), a.rel, a.target]));
    assert.deepEqual(links, [
      ["https://en.wikipedia.org/wiki/Foo_(bar)", "noopener noreferrer nofollow", "_blank"],
      ["https://example.com/x", "noopener noreferrer nofollow", "_blank"],
      // The link ends at the override, which would show its text as ".../exe.txt".
      ["https://evil.example/", "noopener noreferrer nofollow", "_blank"],
      // The one with a user name before its host stays text.
    ]);
    assert.match(await reply.innerText(), /\(https:\/\/example\.com\/x\), not javascript:alert\(1\)/);
    await ui.done();
  });
