// The destination pages as an admin uses them, against stand-ins on loopback: a Discord webhook mock
// (answers like Discord's webhook API), a webhook receiver that records every request, and the real SMTP
// server of the Rust tests (aiosmtpd, tests/deliveries/smtp_sink.py). An admin adds Discord from the site
// page and a visitor's message arrives there; a deleted Discord webhook shows as blocked with its reason;
// an endpoint is added, its delivery shows in the log and a replay arrives again with the same webhook-id;
// a test mail reaches the SMTP server.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { fixture, setUpFirstAdmin, smtpSink, visitor, waitFor } from "./harness.js";

/** Starts `handler` on a loopback port; returns {url, close}. */
async function serve(handler) {
  const server = http.createServer(handler);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

function body(req) {
  return new Promise((resolve) => {
    let data = "";
    req.on("data", (d) => { data += d; });
    req.on("end", () => resolve(data));
  });
}

// Discord: GET on a webhook URL answers the webhook; POST (?wait=true) records the message. A deleted
// webhook answers 404 like Discord's "Unknown Webhook". While `held` is a promise, posts wait for it.
const discord = { posts: [], deleted: false, held: null };
const discordMock = await serve(async (req, res) => {
  const text = await body(req);
  if (req.method === "POST") await discord.held;
  const known = /^\/api\/webhooks\/111\/tok-abcd(\?|$)/.test(req.url) && !discord.deleted;
  if (!known) {
    res.writeHead(404, { "content-type": "application/json" }).end('{"message":"Unknown Webhook","code":10015}');
    return;
  }
  if (req.method === "POST") discord.posts.push(JSON.parse(text));
  res.writeHead(200, { "content-type": "application/json" })
    .end(JSON.stringify({ id: String(discord.posts.length), channel_id: "c1" }));
});

// A webhook receiver: records headers and body, answers 204.
const received = [];
const receiver = await serve(async (req, res) => {
  received.push({ headers: req.headers, body: await body(req) });
  res.writeHead(204).end();
});

// The SMTP server: prints its port, writes each mail as DIR/NNNN.json.
const smtp = await smtpSink();

// The server reads these at start-up (the fixture starts it after this module's top level ran).
process.env.PORCH_DISCORD_API_URL = `${discordMock.url}/api`;
process.env.PORCH_ALLOW_PRIVATE_NETWORKS = "true";
Object.assign(process.env, smtp.env);

let page;
const world = fixture({ site: "Acme Test" }, async ({ browser, porch }) => {
  page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(15000);
  await setUpFirstAdmin(page, porch);
});

after(async () => {
  await discordMock.close();
  await receiver.close();
  await smtp.close();
});

/** Clicks `button` (a test) with Discord holding its answer: the page shows the test as queued. */
async function testWhileDiscordHolds(button) {
  let release;
  discord.held = new Promise((resolve) => { release = resolve; });
  await page.getByRole("button", { name: button }).click();
  await page.waitForURL(/#test-outcome$/);
  assert.match(await page.locator("#test-outcome[data-test=queued]").innerText(), /^Test queued \(.+\), sending/);
  return () => { discord.held = null; release(); };
}

/** Waits, without reloading, until a test's outcome is `state` on the page: the outcome of a
 * queued test updates by itself, in the same element (the live region screen readers follow). */
async function outcomeBecomes(state, release = () => {}) {
  const outcome = page.locator("#test-outcome");
  await outcome.evaluate((el) => { el.porchSeen = "before"; window.porchNotReloaded = true; });
  release();
  await page.locator(`#test-outcome[data-test=${state}]`).waitFor({ timeout: 20000 });
  assert.equal(await outcome.evaluate((el) => el.porchSeen), "before", "the same element, updated");
  assert.equal(await page.evaluate(() => window.porchNotReloaded), true, "no reload");
  assert.equal(await outcome.getAttribute("data-refresh"), null, "and it stops fetching");
}

/** Reloads until `selector` is on the page. */
async function reloadUntil(selector) {
  await waitFor(selector, async () => {
    await page.reload();
    return (await page.locator(selector).count()) > 0;
  });
}

test("an admin adds Discord from the site page and a visitor's message arrives in the channel", { timeout: 60000 }, async () => {
  const { porch, site, host, browser } = world;
  await page.goto(`${porch.url}/sites/${site.key}`);
  await page.getByRole("link", { name: "Discord" }).click();
  await page.waitForURL(/\/discord$/);
  await page.locator("#webhook_url").fill(`${discordMock.url}/api/webhooks/111/tok-abcd`);
  await page.getByRole("button", { name: "Add Discord" }).click();
  await page.waitForURL(/notice=discord-connected/);
  assert.match(await page.locator("[data-hint=webhook]").innerText(), /webhook 111 · token …abcd/);
  assert.equal(await page.locator("[data-health=healthy]").count(), 1);
  assert.equal((await page.content()).includes("tok-abcd"), false, "the token is never shown back");

  const alice = await visitor(browser, host.url);
  await alice.say("Hello from the <b>widget</b>");
  await waitFor("the message at Discord", () => discord.posts.some((p) => p.content.includes("Hello from the")));
  const post = discord.posts.find((p) => p.content.includes("Hello from the"));
  assert.deepEqual(post.allowed_mentions, { parse: [] });

  await outcomeBecomes("sent", await testWhileDiscordHolds("Send test message"));
  assert.ok(discord.posts.some((p) => p.content.startsWith("Test message from Porch")));
  await alice.context.close();
});

test("a Discord webhook deleted on Discord's side shows as blocked with the reason", { timeout: 60000 }, async () => {
  const { porch, site } = world;
  discord.deleted = true;
  await page.goto(`${porch.url}/sites/${site.key}/discord`);
  await outcomeBecomes("failed", await testWhileDiscordHolds("Send test message"));
  const health = page.locator("[data-health=blocked]");
  assert.equal(await health.count(), 1);
  assert.match(await health.innerText(), /HTTP 404: the webhook was deleted or its token is wrong/);
  discord.deleted = false;
});

test("an endpoint is added, its delivery is in the log, and a replay arrives with the same webhook-id", { timeout: 60000 }, async () => {
  const { porch, site, host, browser } = world;
  await page.goto(`${porch.url}/sites/${site.key}`);
  await page.getByRole("link", { name: "Webhooks" }).click();
  await page.locator("#url").fill(`${receiver.url}/hook`);
  // A new endpoint starts with every event ticked; this one wants messages only.
  for (const event of ["conversation.created", "conversation.assigned", "conversation.closed"]) {
    const box = page.getByLabel(event);
    assert.equal(await box.isChecked(), true, `${event} is ticked on a new form`);
    await box.uncheck();
  }
  assert.equal(await page.getByLabel("message.created").isChecked(), true);
  await page.getByRole("button", { name: "Add endpoint" }).click();
  const secret = await page.locator("#new-secret").inputValue();
  assert.match(secret, /^whsec_/);
  // The answer to the post shows the secret; the endpoint's own page is where it lives.
  const endpoint = await page.getByRole("form", { name: "Endpoint settings" }).getAttribute("action");
  await page.goto(`${porch.url}${endpoint}`);

  const bob = await visitor(browser, host.url);
  await bob.say("Webhook me");
  await waitFor("the delivery", () => received.length >= 1);
  await reloadUntil("tr[data-outcome=delivered]");
  assert.equal((await page.content()).includes(secret), false, "the secret is shown once");
  assert.match(await page.locator("tr[data-outcome=delivered]").first().innerText(), /message\.created/);
  await page.getByRole("button", { name: "Replay" }).first().click();
  await page.waitForURL(/notice=replayed/);
  await waitFor("the replay", () => received.length >= 2);
  assert.equal(received[1].headers["webhook-id"], received[0].headers["webhook-id"]);
  assert.equal(received[1].body, received[0].body);
  await bob.context.close();
});

test("a test mail from the email page reaches the SMTP server and shows as sent", { timeout: 60000 }, async () => {
  const { porch, site } = world;
  await page.goto(`${porch.url}/sites/${site.key}/email`);
  assert.match(await page.locator("[data-smtp=set]").innerText(), new RegExp(`127\\.0\\.0\\.1:${smtp.port}`));
  const before = (await smtp.mails()).length;
  await page.getByRole("button", { name: "Send test mail" }).click();
  await page.waitForURL(/#test-outcome$/);
  await waitFor("the test mail", async () => (await smtp.mails()).length > before);
  await outcomeBecomes("sent");
  // The outcome stays, with its time, for whoever opens the page later.
  await page.goto(`${porch.url}/sites/${site.key}/email`);
  const outcome = page.locator("[data-test=sent]");
  assert.match(await outcome.innerText(), /^Latest test \(.+\): sent\.$/);
  // In the reader's time zone, as on every signed-in page (the UTC text is for no scripts).
  const time = outcome.locator("time[datetime]");
  assert.doesNotMatch(await time.innerText(), /UTC/);
  assert.ok(await time.getAttribute("title"), "the full local date and time as the tooltip");
});
