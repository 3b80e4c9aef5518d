// Snooze, as an agent uses it: the side panel's *Snooze for* takes the conversation out of
// Open (another tab of the inbox loses the row live) and into the Snoozed tab with its end;
// the visitor's next message brings it back; *Unsnooze* brings it back at once; and on the
// list `b` snoozes the focused row for an hour and says so (and on the Snoozed tab refuses).
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, snap, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
let page;
let other;
let guest;
const world = fixture({ site: "Acme Shop", agent: AGENT }, async ({ porch, browser, host }) => {
  guest = await visitor(browser, host.url);
  await guest.say("Where is my parcel?");
  // Away from UTC, so that "until tomorrow, 9:00" is seen to mean the agent's own morning.
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: "America/New_York" });
  page = await context.newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, AGENT.email);
  other = await context.newPage();
  other.setDefaultTimeout(15000);
});

const rows = (p) => p.locator("#conversations > li");

test("Snooze from the page: out of Open live, in Snoozed, back when the visitor writes", { timeout: 60000 }, async () => {
  const { porch } = world;
  await other.goto(`${porch.url}/inbox`);
  assert.equal(await rows(other).count(), 1);
  await page.goto(`${porch.url}/inbox`);
  await rows(page).first().locator("a").click();
  await page.waitForURL(/\/conversations\/\d+$/);

  await page.getByLabel("Snooze", { exact: true }).selectOption({ label: "for 4 hours" });
  await Promise.all([
    page.waitForURL(/\/conversations\/\d+(\?|$)/),
    page.getByRole("button", { name: "Snooze", exact: true }).click(),
  ]);
  const notice = page.locator("main .notice-success");
  await waitFor("the notice", async () => (await notice.textContent()).startsWith("Snoozed:"));
  const aside = page.locator("#conversation-aside");
  assert.match(await aside.innerText(), /Snoozed until .+, or until the visitor writes\./);
  assert.equal(await aside.locator(".badge").first().textContent(), "Snoozed");
  // The end is shown in the reader's time, about four hours from now.
  const end = Date.parse(await aside.locator(".snooze time").getAttribute("datetime"));
  assert.ok(Math.abs(end - (Date.now() + 4 * 3600e3)) < 120e3, `ends at ${new Date(end).toISOString()}`);
  await waitFor("the status line", async () => (await page.locator("main").innerText()).includes("Ana snoozed this conversation for 4 hours"));
  await waitFor("the other tab to lose the row", async () => (await rows(other).count()) === 0);
  await snap(page, "snooze-aside");

  await other.goto(`${porch.url}/inbox?filter=snoozed`);
  assert.equal(await other.locator("nav.tabs [aria-current=page]").textContent(), "Snoozed");
  assert.match(await rows(other).first().innerText(), /Snoozed until /);

  await other.goto(`${porch.url}/inbox`);
  await guest.say("Hello? Still waiting.");
  await waitFor("the row back in Open", async () => (await rows(other).count()) === 1);
  await waitFor("the page's panel to drop the snooze", async () => (await aside.locator("#snooze-minutes").count()) === 1);
});

test("Unsnooze on the page, and b on the list", { timeout: 60000 }, async () => {
  const { porch } = world;
  await page.goto(`${porch.url}/inbox`);
  await page.keyboard.press("j");
  await page.keyboard.press("b");
  await waitFor("the row to leave Open", async () => (await rows(page).count()) === 0);
  assert.match(await page.locator("#keys-said").innerText(), /^Snoozed the conversation with Visitor #\d+ for an hour\.$/);

  await page.goto(`${porch.url}/inbox?filter=snoozed`);
  // On the Snoozed tab, b says so and posts nothing (the server would move the end).
  await page.keyboard.press("j");
  await page.keyboard.press("b");
  assert.match(await page.locator("#keys-said").innerText(), /^The conversation with Visitor #\d+ is snoozed already: /);
  assert.equal(await rows(page).count(), 1);
  await rows(page).first().locator("a").click();
  await page.waitForURL(/\/conversations\/\d+$/);
  await Promise.all([
    page.waitForURL(/notice=unsnoozed|\/conversations\/\d+$/),
    page.getByRole("button", { name: "Unsnooze" }).click(),
  ]);
  await waitFor("the notice", async () => (await page.locator("main .notice-success").textContent()).startsWith("Unsnoozed"));
  const aside = page.locator("#conversation-aside");
  assert.equal(await aside.locator("#snooze-minutes").count(), 1);

  // Until tomorrow, 9:00 where the agent is (New York), not in UTC.
  await page.getByLabel("Snooze", { exact: true }).selectOption({ label: "until tomorrow, 9:00" });
  await Promise.all([
    page.waitForURL(/notice=snoozed|\/conversations\/\d+$/),
    page.getByRole("button", { name: "Snooze", exact: true }).click(),
  ]);
  const end = Date.parse(await aside.locator(".snooze time").getAttribute("datetime"));
  const morning = await page.evaluate(() => {
    const at = new Date();
    at.setDate(at.getDate() + 1);
    at.setHours(9, 0, 0, 0);
    return at.getTime();
  });
  assert.equal(end, morning, `ends at ${new Date(end).toISOString()}`);
  await Promise.all([page.waitForURL(/notice=unsnoozed|\/conversations\/\d+$/), aside.getByRole("button", { name: "Unsnooze" }).click()]);

  // Until a date and time of the agent's choosing: its field shows only for that choice, and
  // the time is New York's.
  const until = aside.getByLabel("Until (your time)");
  assert.equal(await until.isVisible(), false);
  await page.getByLabel("Snooze", { exact: true }).selectOption({ label: "until a date and time\u2026" });
  await until.waitFor({ state: "visible" });
  // The field comes before the button that sends it.
  const button = aside.getByRole("button", { name: "Snooze", exact: true });
  assert.ok((await until.boundingBox()).y < (await button.boundingBox()).y, "the field is above the button");
  // Sent empty: the conversation's page comes back with the reason, the choice kept, the field
  // shown and focused, the reply box still there.
  await button.click();
  await page.getByText("Choose the date and time the snooze ends.").waitFor();
  await until.waitFor({ state: "visible" });
  assert.equal(await page.evaluate(() => document.activeElement?.id), "snooze-until");
  assert.equal(await page.locator("#reply-form").count(), 1);
  const chosen = await page.evaluate(() => {
    const at = new Date();
    at.setDate(at.getDate() + 3);
    at.setHours(14, 30, 0, 0);
    const pad = (n) => String(n).padStart(2, "0");
    return { value: `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T14:30`, ms: at.getTime() };
  });
  await until.fill(chosen.value);
  await Promise.all([
    page.waitForURL(/notice=snoozed|\/conversations\/\d+$/),
    page.getByRole("button", { name: "Snooze", exact: true }).click(),
  ]);
  const custom = Date.parse(await aside.locator(".snooze time").getAttribute("datetime"));
  assert.equal(custom, chosen.ms, `ends at ${new Date(custom).toISOString()}`);
  await Promise.all([page.waitForURL(/notice=unsnoozed|\/conversations\/\d+$/), aside.getByRole("button", { name: "Unsnooze" }).click()]);
  await page.goto(`${porch.url}/inbox`);
  assert.equal(await rows(page).count(), 1);
});
