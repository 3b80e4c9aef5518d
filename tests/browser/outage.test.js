// Messages written while the server is down wait in the browser and arrive exactly once when it is back.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, watch, waitFor } from "./harness.js";

const world = fixture({ site: "Acme Outage", agent: { email: "a@example.com", name: "Ana" } });

const bubble = (page, text) => page.locator("[data-porch=message][data-author=visitor]", { hasText: text });

// A new visitor with the chat open and connected: their browser context, page, what the page
// asked of Porch, and the status line.
async function openChat() {
  const { porch, host, browser } = world;
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const seen = watch(page, porch.url);
  const status = page.locator("[data-porch=status]");
  await page.goto(host.url);
  await page.locator("[data-porch=launcher]").click();
  await waitFor("connected", async () => (await status.getAttribute("data-state")) === "connected");
  return { context, page, seen, status };
}

// What visitors of the site have sent, as stored, oldest conversation first. Each test is its own visitor.
async function storedBodies() {
  const { porch, site } = world;
  const { body } = await porch.api("GET", "/conversations");
  const convs = body.conversations.filter((c) => c.site === site.key).sort((a, b) => a.id - b.id);
  assert.ok(convs.length > 0, JSON.stringify(body));
  const bodies = [];
  for (const c of convs) {
    const { body: list } = await porch.api("GET", `/conversations/${c.id}/messages`);
    bodies.push(...list.messages.filter((m) => m.author === "visitor").map((m) => m.body));
  }
  return bodies;
}

test("a message sent during an outage is kept and delivered once when the server is back", { timeout: 150000 },
  async () => {
    const { porch, site } = world;
    const { context, page, seen, status } = await openChat();
    await page.locator("[data-porch=input]").fill("Before the outage");
    await page.locator("[data-porch=send]").click();
    await bubble(page, "Before the outage").and(page.locator("[data-status=sent]")).waitFor();

    // First outage: the panel stays up, says it is reconnecting, and keeps the message as "Sending…".
    await porch.stop();
    await waitFor("reconnecting", async () => /Reconnecting in \d+ s…/.test(await status.innerText()));
    await page.locator("[data-porch=input]").fill("Written during the outage");
    await page.locator("[data-porch=input]").press("Enter");
    const during = bubble(page, "Written during the outage");
    await during.waitFor();
    assert.equal(await during.getAttribute("data-status"), "sending");
    assert.match(await during.locator(".meta").innerText(), /Sending…/);
    const kept = await page.evaluate((k) => JSON.parse(localStorage.getItem(k)), `porch:${site.key}:pending`);
    assert.deepEqual(kept.map((m) => m.body), ["Written during the outage"]);

    await porch.start(); // same port, same data dir
    await during.and(page.locator("[data-status=sent]")).waitFor({ timeout: 60000 });
    assert.equal(await bubble(page, "Written during the outage").count(), 1);
    assert.deepEqual(await storedBodies(), ["Before the outage", "Written during the outage"]);
    assert.equal(await page.evaluate((k) => localStorage.getItem(k), `porch:${site.key}:pending`), null);

    // Second outage, with a reload while the server is down. The browser may have panel.js cached (the
    // server sends max-age=300): then the chat reopens and waits to reconnect. Otherwise the launcher
    // says the chat is unavailable and the visitor clicks again later. Either way the message waits in
    // localStorage and is delivered once.
    await porch.stop();
    await waitFor("reconnecting", async () => /Reconnecting/.test(await status.innerText()));
    await page.locator("[data-porch=input]").fill("Written before a reload");
    await page.locator("[data-porch=input]").press("Enter");
    await bubble(page, "Written before a reload").waitFor();
    await page.reload();
    const panel = page.locator("[data-porch=panel]");
    const unavailable = page.locator("[data-porch=unavailable]");
    await waitFor("the panel or the unavailable note", async () =>
      (await panel.isVisible()) || (await unavailable.isVisible()));
    if (await panel.isVisible()) {
      await bubble(page, "Written before a reload").and(page.locator("[data-status=sending]")).waitFor();
      await waitFor("reconnecting", async () => /Reconnecting/.test(await status.innerText()));
      await porch.start();
    } else {
      await porch.start();
      await page.locator("[data-porch=launcher]").click();
      await panel.waitFor({ state: "visible" });
    }
    await bubble(page, "Written before a reload").and(page.locator("[data-status=sent]")).waitFor({ timeout: 30000 });
    // The history came back too, each message once.
    const shown = await page.locator("[data-porch=message][data-author=visitor] .bubble").allInnerTexts();
    const expected = ["Before the outage", "Written during the outage", "Written before a reload"];
    assert.deepEqual(shown, expected);
    assert.deepEqual(await storedBodies(), expected);

    assert.deepEqual(seen.errors, [], "uncaught errors in the page");
    await context.close();
  });

// A visitor whose network goes away: the panel says so at once rather than "Connected", keeps what is
// written meanwhile, and sends it once when the network is back.
test("offline, the panel says so and sends what was written once the network is back", { timeout: 60000 },
  async () => {
    const { context, page, seen, status } = await openChat();

    await context.setOffline(true);
    await waitFor("offline", async () => (await status.getAttribute("data-state")) === "offline");
    assert.equal(await status.innerText(), "Offline, waiting for the network…");
    await page.locator("[data-porch=input]").fill("Written in a tunnel");
    await page.locator("[data-porch=input]").press("Enter");
    const written = bubble(page, "Written in a tunnel");
    await written.waitFor();
    assert.equal(await written.getAttribute("data-status"), "sending");
    await page.waitForTimeout(1500); // no reconnect countdown while offline
    assert.equal(await status.getAttribute("data-state"), "offline");

    await context.setOffline(false);
    await written.and(page.locator("[data-status=sent]")).waitFor();
    assert.equal(await status.getAttribute("data-state"), "connected");
    assert.equal((await storedBodies()).filter((b) => b === "Written in a tunnel").length, 1);
    assert.deepEqual(seen.errors, [], "uncaught errors in the page");
    await context.close();
  });

// A connection that dies without a word (the server frozen here, a dropped proxy or a sleeping laptop in
// life) keeps the browser's socket open for minutes. The panel notices that its message got no answer,
// connects again and resends; the server, back, stores the message once though it may get it twice.
test("a message that gets no answer is sent again on a new connection and stored once", { timeout: 90000 },
  async () => {
    const { porch } = world;
    const { context, page, status } = await openChat();

    porch.proc.kill("SIGSTOP");
    try {
      await page.locator("[data-porch=input]").fill("Sent into the silence");
      await page.locator("[data-porch=input]").press("Enter");
      const written = bubble(page, "Sent into the silence");
      await written.waitFor();
      const askedAt = Date.now();
      // 10 s without an answer, then the socket is given up: the status leaves "Connected".
      await waitFor("the panel gives up the silent socket", async () =>
        (await status.getAttribute("data-state")) !== "connected", { timeoutMs: 20000 });
      assert.ok(Date.now() - askedAt >= 9000, `gave up after ${Date.now() - askedAt} ms`);
      assert.equal(await written.getAttribute("data-status"), "sending");
    } finally {
      porch.proc.kill("SIGCONT");
    }
    await bubble(page, "Sent into the silence").and(page.locator("[data-status=sent]")).waitFor({ timeout: 40000 });
    assert.equal((await storedBodies()).filter((b) => b === "Sent into the silence").length, 1);
    assert.equal(await bubble(page, "Sent into the silence").count(), 1);
    await context.close();
  });
