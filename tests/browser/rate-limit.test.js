// A visitor who types faster than the site allows: the server refuses some messages with rate_limited,
// and the widget waits and resends them, so every message arrives exactly once and in order.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, waitFor } from "./harness.js";

const world = fixture({ site: "Acme Burst", agent: { email: "a@example.com", name: "Ana" } });

// The default visitor limit is bursts of 10 then 30 a minute (one every 2 s): 14 messages need
// about 8 s of waiting.
const COUNT = 14;

test("a burst over the rate limit is delivered in full, once each and in order", { timeout: 90000 }, async () => {
  const { porch, site, host, browser } = world;
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  await page.goto(host.url);
  await page.locator("[data-porch=launcher]").click();
  const status = page.locator("[data-porch=status]");
  await waitFor("connected", async () => (await status.getAttribute("data-state")) === "connected");
  const input = page.locator("[data-porch=input]");
  const texts = Array.from({ length: COUNT }, (_, i) => `Burst message ${i + 1}`);
  for (const text of texts) {
    await input.fill(text);
    await input.press("Enter");
  }
  const error = page.locator("[data-porch=error]");
  await error.waitFor({ state: "visible" });
  assert.match(await error.innerText(), /Please wait \d+ s\./);

  const sent = page.locator("[data-porch=message][data-author=visitor][data-status=sent]");
  await waitFor(`${COUNT} messages sent`, async () => (await sent.count()) === COUNT, { timeoutMs: 60000 });
  assert.deepEqual(await page.locator("[data-porch=message][data-author=visitor] .bubble").allInnerTexts(), texts);

  const { body } = await porch.api("GET", "/conversations");
  const convs = body.conversations.filter((c) => c.site === site.key);
  assert.equal(convs.length, 1);
  const { body: stored } = await porch.api("GET", `/conversations/${convs[0].id}/messages`);
  assert.deepEqual(stored.messages.map((m) => m.body), texts);
  assert.deepEqual(errors, []);
  await context.close();
});
