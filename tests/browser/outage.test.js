// Messages written while the server is down wait in the browser and arrive exactly once when it is back.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, watch, waitFor } from "./harness.js";

const world = fixture({ site: "Acme Outage", agent: { email: "a@example.com", name: "Ana" } });

const bubble = (page, text) => page.locator("[data-porch=message][data-author=visitor]", { hasText: text });

async function storedBodies() {
  const { porch, site } = world;
  const { body } = await porch.api("GET", "/conversations");
  const convs = body.conversations.filter((c) => c.site === site.key);
  assert.equal(convs.length, 1, JSON.stringify(body));
  const { body: list } = await porch.api("GET", `/conversations/${convs[0].id}/messages`);
  return list.messages.filter((m) => m.author === "visitor").map((m) => m.body);
}

test("a message sent during an outage is kept and delivered once when the server is back", { timeout: 150000 },
  async () => {
    const { porch, site, host, browser } = world;
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    const seen = watch(page, porch.url);
    const status = page.locator("[data-porch=status]");
    await page.goto(host.url);
    await page.locator("[data-porch=launcher]").click();
    await waitFor("connected", async () => (await status.getAttribute("data-state")) === "connected");
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
