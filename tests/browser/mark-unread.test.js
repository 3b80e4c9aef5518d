// Mark unread, as an agent uses it: the conversation page's *Mark unread* takes the agent to
// the inbox with a notice, the row's unread dot back and the tab title counting it; another tab
// of the inbox shows the dot at once; opening the conversation reads it again; and on the list
// `u` marks the focused row unread in place and says so.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, snap, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
let page;
let other;
const world = fixture({ site: "Acme Shop", agent: AGENT }, async ({ porch, browser, host }) => {
  const v = await visitor(browser, host.url);
  await v.say("Where is my parcel?");
  await v.context.close();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, AGENT.email);
  // A second tab of the same browser, on the inbox.
  other = await context.newPage();
  other.setDefaultTimeout(15000);
});

const row = (p) => p.locator("#conversations > li").first();
const isUnread = async (p) => (await row(p).getAttribute("class")).includes("unread")
  && (await row(p).locator(".dot").count()) === 1;

test("Mark unread on the page: back to the inbox, unread again everywhere until opened", { timeout: 60000 }, async () => {
  const { porch } = world;
  await page.goto(`${porch.url}/inbox`);
  await row(page).locator("a").click();
  await page.waitForURL(/\/conversations\/\d+$/);
  await other.goto(`${porch.url}/inbox`);
  await waitFor("the other tab to see it read", async () => !(await row(other).getAttribute("class")).includes("unread"));
  assert.equal(await other.title(), "Inbox · Porch");

  await Promise.all([page.waitForURL(/\/inbox$/), page.getByRole("button", { name: "Mark unread" }).click()]);
  const notice = page.locator("main .notice-success");
  await waitFor("the notice", async () => (await notice.textContent()).startsWith("Marked unread"));
  assert.equal(new URL(page.url()).search, "", "the address drops the notice");
  assert.equal(await isUnread(page), true);
  assert.equal(await row(page).locator(".visually-hidden").textContent(), "Unread: ");
  await waitFor("the tab title to count it", async () => (await page.title()) === "(1) Inbox · Porch");
  await waitFor("the other tab's row", async () => isUnread(other));
  await waitFor("the other tab's title", async () => (await other.title()) === "(1) Inbox · Porch");
  await snap(page, "mark-unread-inbox");

  await row(page).locator("a").click();
  await page.waitForURL(/\/conversations\/\d+$/);
  await waitFor("the other tab to see it read again", async () => !(await isUnread(other)));
  assert.equal(await other.title(), "Inbox · Porch");
});

test("u on the inbox list marks the focused row unread in place", { timeout: 60000 }, async () => {
  const { porch } = world;
  await page.goto(`${porch.url}/inbox`);
  assert.equal(await isUnread(page), false);
  await page.keyboard.press("j");
  await page.keyboard.press("u");
  await waitFor("the row's dot", async () => isUnread(page));
  assert.match(await page.locator("#keys-said").innerText(), /^Marked the conversation with Visitor #\d+ unread\.$/);
  assert.match(page.url(), /\/inbox$/, "the list stays");
  await waitFor("the tab title", async () => (await page.title()) === "(1) Inbox · Porch");
});
