// The capacity page as an admin uses it: a fresh server says it has no estimate yet; a visitor
// chats; the open page's graphs (server-drawn SVG) gain points for the new traffic without a
// reload; the range tabs switch to the minute rollups.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, snap, visitor, waitFor } from "./harness.js";

const ADMIN = "ana@example.com";
const world = fixture({ site: "Acme Shop", agent: { email: ADMIN, name: "Ana" } });

/** The number of points the graph titled `title` draws (0 when it shows no SVG). */
async function points(page, title) {
  const svg = page.locator(`svg[aria-label^="${title}"]`);
  if ((await svg.count()) === 0) return 0;
  return Number(await svg.getAttribute("data-points"));
}

test("an admin watches the capacity graphs follow live widget traffic", { timeout: 90000 }, async () => {
  const { porch, host, browser } = world;
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(20000);
  const trouble = [];
  page.on("pageerror", (e) => trouble.push(e.message));
  await signIn(page, porch, ADMIN);

  await page.getByRole("link", { name: "Capacity" }).click();
  await page.waitForURL(/\/capacity/);
  await page.getByRole("link", { name: "15 minutes" }).click();
  await page.waitForURL(/range=15m/);
  assert.equal(await page.getByRole("heading", { name: "Capacity" }).count(), 1);
  await page.getByText("No headroom estimate yet").waitFor();
  await page.getByText("No load test recorded yet").waitFor();
  // Before any message there is no ack latency to draw.
  assert.equal(await points(page, "Ack latency"), 0);
  await waitFor("the sampler's first seconds", async () => (await points(page, "Visitor messages")) > 0,
    { timeoutMs: 15000 });
  await snap(page, "capacity-quiet");

  // The page stays open (no navigation) while a visitor chats.
  await page.evaluate(() => { window.stillTheSamePage = true; });
  const before = await points(page, "Visitor messages");
  const v = await visitor(browser, host.url);
  for (const text of ["Hello!", "Do you ship to Norway?", "Thanks"]) await v.say(text);

  await waitFor("the ack latency graph to appear live", async () => (await points(page, "Ack latency")) > 0,
    { timeoutMs: 20000 });
  assert.ok((await points(page, "Visitor messages")) > before, "the messages graph gained points");
  assert.ok(await page.evaluate(() => window.stillTheSamePage), "updated in place, not reloaded");
  // One open widget shows in the connections graph's newest point.
  const latest = await page.locator('svg[aria-label^="Open connections"] circle.series-0').getAttribute("cy");
  const zero = await page.locator('svg[aria-label^="Open connections"] line.grid').first().getAttribute("y1");
  assert.ok(Number(latest) < Number(zero), "the widget count is above zero");
  await snap(page, "capacity-live");

  // The long ranges read the minute rollups instead (none or one on a server this young).
  await page.getByRole("link", { name: "7 days" }).click();
  await page.waitForURL(/range=7d/);
  assert.equal(await page.getByRole("link", { name: "7 days" }).getAttribute("aria-current"), "page");
  await page.getByRole("heading", { name: "Headroom" }).waitFor();
  assert.deepEqual(trouble, []);
  await v.context.close();
  await context.close();
});
