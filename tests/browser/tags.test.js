// Tags, as an agent uses them (docs/admin.md, "Tags"): the side panel's *Add tags* takes several
// at once, stored in lower case, each a link with a × to remove it, and a status line says who
// did what; another tab's inbox shows the badges live and its `?tag=` list loses the row live;
// `t` focuses the field and Escape leaves it; a bad tag is refused with the reason; the field
// suggests the team's tags. On a phone the buttons are big enough and nothing scrolls sideways.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, snap, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
const LONG = "a-very-long-tag-name-for-phone-layout-ok";
let page;
let other;
const world = fixture({ site: "Acme Shop", agent: AGENT }, async ({ porch, browser, host }) => {
  for (const text of ["I want my money back", "Do you ship abroad?"]) {
    const guest = await visitor(browser, host.url);
    await guest.say(text);
    await guest.context.close();
  }
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, AGENT.email);
  other = await context.newPage();
  other.setDefaultTimeout(15000);
});

const rows = (p) => p.locator("#conversations > li");
const badges = (row) => row.locator("ul.tags > li.badge.tag").allTextContents();

/** Opens the conversation whose row says `text`, from the inbox. */
async function open(p, text) {
  await p.goto(`${world.porch.url}/inbox`);
  await rows(p).filter({ hasText: text }).locator("a").first().click();
  await p.waitForURL(/\/conversations\/\d+$/);
}

/** Clicks `button` of a tags form; resolves with the answer to its post, once the next page loaded. */
async function post(p, button) {
  const [answer] = await Promise.all([
    p.waitForResponse((r) => r.request().method() === "POST" && /\/tags$/.test(r.url())),
    button.click(),
  ]);
  await p.waitForLoadState();
  return answer;
}

/** Types `tags` into *Add tags* and submits. */
async function addTags(p, tags) {
  await p.getByLabel("Add tags").fill(tags);
  return post(p, p.getByRole("button", { name: "Add", exact: true }));
}

test("add, see live, remove, t and Escape, a refused tag", { timeout: 90000 }, async () => {
  const { porch } = world;
  await other.goto(`${porch.url}/inbox`);
  const row = rows(other).filter({ hasText: "money back" });
  assert.deepEqual(await badges(row), []);
  await open(page, "money back");

  await addTags(page, "Refund, VIP  plan");
  await waitFor("the notice", async () => (await page.locator("main .notice-success").textContent()) === "Tags saved.");
  const section = page.locator("section.panel", { has: page.getByRole("heading", { name: "Tags", exact: true }) });
  const links = section.locator("a.badge.tag");
  assert.deepEqual(await links.allTextContents(), ["refund", "vip plan"]);
  assert.equal(await links.first().getAttribute("href"), "/inbox?tag=refund");
  await waitFor("the status line", async () =>
    (await page.locator("main").innerText()).includes("Ana tagged this conversation refund and vip plan"));
  await waitFor("the other tab's badges", async () => (await badges(row)).join() === "refund,vip plan");
  await snap(page, "tags-aside");

  // The list of one tag, from the filter (offered once the page is loaded again): it loses
  // the row live when the tag is removed.
  await other.reload();
  const filter = other.getByLabel("Tag", { exact: true });
  assert.deepEqual(await filter.locator("option").allTextContents(), ["Any tag", "refund", "vip plan"]);
  await filter.selectOption({ label: "refund" });
  await Promise.all([other.waitForURL(/tag=refund/), other.getByRole("button", { name: "Show" }).click()]);
  await waitFor("the count line", async () => /tagged refund/.test(await other.locator("[data-count]").innerText()));
  assert.equal(await rows(other).count(), 1);
  assert.match(await rows(other).first().innerText(), /money back/);

  await post(page, section.getByRole("button", { name: "Remove the tag refund" }));
  await waitFor("the removal's status line", async () =>
    (await page.locator("main").innerText()).includes("Ana removed the tag refund"));
  await waitFor("the link to go", async () => (await links.allTextContents()).join() === "vip plan");
  await waitFor("the ?tag=refund list to lose the row", async () => (await rows(other).count()) === 0);

  // t puts the focus in the field; Escape leaves it, and keys work again.
  await page.evaluate(() => document.activeElement?.blur());
  await page.keyboard.press("t");
  assert.equal(await page.evaluate(() => document.activeElement?.id), "tag-add");
  await page.keyboard.press("Escape");
  assert.notEqual(await page.evaluate(() => document.activeElement?.id), "tag-add");
  await page.keyboard.press("t");
  assert.equal(await page.evaluate(() => document.activeElement?.id), "tag-add");

  // A colleague's page of the conversation follows the side panel live, and keeps what the
  // colleague was typing in its own field.
  await other.goto(page.url().replace(/[?#].*$/, ""));
  await other.locator("#tag-add").fill("half-typ");
  await addTags(page, "B2B");
  await waitFor("the colleague's side panel", async () =>
    (await other.locator("#conversation-aside a.badge.tag").allTextContents()).includes("b2b"));
  assert.equal(await other.locator("#tag-add").inputValue(), "half-typ");

  const refused = await addTags(page, "<b>, ok");
  assert.equal(refused.status(), 422);
  assert.match(await page.locator("main .notice-error").innerText(),
    /A tag has letters, digits, spaces and - _ \. \/ & \+ # ' only, not \u201c<\u201d\./);
  // The conversation's own page, with what was typed kept in the field, which has the focus.
  assert.equal(await page.locator("#reply-body").count(), 1);
  assert.equal(await page.evaluate(() => document.activeElement?.id), "tag-add");
  assert.equal(await page.locator("#tag-add").inputValue(), "<b>, ok");
});

test("on a phone: big enough to tap, nothing scrolls sideways", { timeout: 90000 }, async () => {
  const { porch, browser } = world;
  const context = await browser.newContext({ viewport: { width: 375, height: 667 }, isMobile: true, hasTouch: true });
  const phone = await context.newPage();
  phone.setDefaultTimeout(15000);
  await signIn(phone, porch, AGENT.email);
  await open(phone, "ship abroad");
  // The team's tags this conversation lacks are suggested.
  const suggested = () => phone.locator("#tag-suggestions option").evaluateAll((os) => os.map((o) => o.value));
  assert.deepEqual(await suggested(), ["b2b", "vip plan"]);
  await addTags(phone, `${LONG}, vip plan`);
  const section = phone.locator("section.panel", { has: phone.getByRole("heading", { name: "Tags", exact: true }) });
  await waitFor("both tags", async () => (await section.locator("a.badge.tag").count()) === 2);
  assert.deepEqual(await suggested(), ["b2b"]);

  const targets = section.locator("a.badge.tag, button.tag-remove");
  assert.equal(await targets.count(), 4);
  for (const target of await targets.all()) {
    const box = await target.boundingBox();
    const name = (await target.getAttribute("aria-label")) ?? (await target.textContent());
    assert.ok(box.width >= 24 && box.height >= 24, `${name}: ${box.width}x${box.height}`);
  }
  const sideways = () => phone.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(await sideways() <= 0, `the conversation page scrolls ${await sideways()} px sideways`);
  await snap(phone, "tags-phone-aside");

  await phone.goto(`${porch.url}/inbox`);
  await waitFor("the long tag's badge", async () => (await phone.locator("li.badge.tag", { hasText: LONG }).count()) === 1);
  assert.ok(await sideways() <= 0, `the inbox scrolls ${await sideways()} px sideways`);
  await snap(phone, "tags-phone-inbox");
  await context.close();
});
