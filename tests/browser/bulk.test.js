// Several at once, as an agent uses it: tick rows (with the pointer, with x, or Select all),
// see how many are ticked, choose an action and Apply; the list comes back saying how many
// changed, without the ticked rows. A row the live stream replaces keeps its tick.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, snap, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
let page;
let guests;
const world = fixture({ site: "Acme Shop", agent: AGENT }, async ({ porch, browser, host }) => {
  guests = [];
  for (const text of ["Where is my parcel?", "Do you ship abroad?", "Is this in stock?"]) {
    const guest = await visitor(browser, host.url);
    await guest.say(text);
    guests.push(guest);
  }
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, AGENT.email);
});

const rows = () => page.locator("#conversations > li");
const count = () => page.locator("#bulk [data-selected]").innerText();

test("tick rows, Apply: the list says how many changed", { timeout: 60000 }, async () => {
  const { porch } = world;
  await page.goto(`${porch.url}/inbox`);
  await waitFor("three rows", async () => (await rows().count()) === 3);
  const apply = page.locator("#bulk button[type=submit]");
  assert.equal(await apply.isVisible(), false, "nothing ticked yet: only Select all, beside the count");
  assert.equal(await count(), "");

  await rows().nth(0).getByRole("checkbox").check();
  // x ticks the focused row, as in Gmail.
  await rows().nth(1).locator("a").focus();
  await page.keyboard.press("x");
  assert.equal(await rows().nth(1).getByRole("checkbox").isChecked(), true);
  assert.equal(await count(), "2 selected");
  assert.equal(await apply.isVisible(), true);
  assert.equal(await page.getByLabel("Select all").evaluate((b) => b.indeterminate), true);

  // A visitor writes in a ticked row: the stream replaces it, and the tick stays.
  const ticked = await rows().nth(1).getAttribute("id");
  const writer = (await rows().nth(1).innerText()).includes("abroad") ? 1 : (await rows().nth(1).innerText()).includes("stock") ? 2 : 0;
  await guests[writer].say("Any news?");
  await waitFor("the row replaced with the new message", async () =>
    (await page.locator(`#${ticked}`).innerText()).includes("Any news?"));
  assert.equal(await page.locator(`#${ticked}`).getByRole("checkbox").isChecked(), true);
  assert.equal(await count(), "2 selected");
  await snap(page, "bulk-ticked");

  await page.getByLabel("With the selected").selectOption({ label: "Close" });
  await Promise.all([page.waitForURL(/\/inbox/), apply.click()]);
  const notice = page.locator("main .notice-success");
  await waitFor("the notice", async () => (await notice.textContent()) === "Closed 2 conversations.");
  assert.doesNotMatch(new URL(page.url()).search, /bulk=|done=/, "the address drops the notice");
  await waitFor("one row left", async () => (await rows().count()) === 1);
});

test("Select all ticks every row, and none hides the action", { timeout: 60000 }, async () => {
  const { porch } = world;
  await page.goto(`${porch.url}/inbox?filter=closed`);
  await waitFor("two closed rows", async () => (await rows().count()) === 2);
  await page.getByLabel("Select all").check();
  assert.equal(await count(), "2 selected");
  await page.getByLabel("Select all").uncheck();
  assert.equal(await count(), "");
  assert.equal(await page.locator("#bulk button[type=submit]").isVisible(), false);
  await page.getByLabel("Select all").check();
  await page.getByLabel("With the selected").selectOption({ label: "Assign to me" });
  await Promise.all([page.waitForURL(/bulk=|\/inbox/), page.locator("#bulk").getByRole("button", { name: "Apply" }).click()]);
  await waitFor("the notice", async () => (await page.locator("main .notice-success").textContent()) === "Assigned 2 conversations to you.");
  assert.match(new URL(page.url()).search, /filter=closed|status=closed/, "back to the list it came from");
});

// A page watched live can grow past what the server takes at once (500); ticking more offers no Apply
// (shown here with the form's limit lowered to 1, as two rows cost less than 501).
test("more rows ticked than the server takes at once: no Apply, and a word why", { timeout: 60000 }, async () => {
  const { porch } = world;
  await page.goto(`${porch.url}/inbox?filter=closed`);
  await waitFor("rows", async () => (await rows().count()) >= 2);
  assert.equal(await page.locator("#bulk").getAttribute("data-max"), "500");
  await page.locator("#bulk").evaluate((form) => { form.dataset.max = "1"; });
  await rows().nth(0).getByRole("checkbox").check();
  assert.equal(await count(), "1 selected");
  assert.equal(await page.locator("#bulk button[type=submit]").isVisible(), true);
  await rows().nth(1).getByRole("checkbox").check();
  assert.equal(await count(), "2 selected: at most 1 at once, untick some");
  assert.equal(await page.locator("#bulk button[type=submit]").isVisible(), false);
  await rows().nth(1).getByRole("checkbox").uncheck();
  assert.equal(await page.locator("#bulk button[type=submit]").isVisible(), true);
});
