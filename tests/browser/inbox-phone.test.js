// The inbox on a phone, upright and sideways (docs/admin.md, "Phones and dark mode"): the filters
// fold into a line that says what they are, so the first conversations show on the first screen,
// and they unfold and work on a tap; on a larger screen they show in full, as before.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, visitor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana Agent" };
const world = fixture({ site: "Acme", agent: AGENT }, async ({ browser, host }) => {
  for (let i = 1; i <= 5; i++) {
    const v = await visitor(browser, host.url);
    await v.say(`Hello number ${i}, where is my parcel?`);
    await v.context.close();
  }
});

/** The inbox at `width` x `height`, signed in, on a touch screen below 1000 px. */
async function inbox(width, height) {
  const { porch, browser } = world;
  const context = await browser.newContext({ viewport: { width, height }, hasTouch: width < 1000 });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, AGENT.email);
  await page.goto(`${porch.url}/inbox`);
  return { page, context };
}

/** How many conversations show whole on the first screen, and where the first one starts. */
const firstScreen = (page) => page.locator("#conversations li").evaluateAll((rows) => ({
  whole: rows.filter((li) => li.getBoundingClientRect().bottom <= innerHeight).length,
  firstTop: rows[0].getBoundingClientRect().top,
}));

for (const [width, height, whole] of [[360, 640, 2], [390, 844, 4], [640, 360, 0], [844, 390, 1]]) {
  const shown = whole === 0 ? "the first conversation's name shows"
    : `${whole} whole conversation${whole === 1 ? "" : "s"} show`;
  test(`at ${width}x${height} the filters are folded and ${shown} on the first screen`,
    { timeout: 60000 }, async () => {
      const { page, context } = await inbox(width, height);
      const summary = page.locator(".filter-box > summary");
      assert.equal(await summary.innerText(), "Filters: Open · Anyone · All sites · Newest activity first");
      assert.equal(await page.getByLabel("Assignee").isVisible(), false, "the selects are folded");
      const seen = await firstScreen(page);
      assert.ok(seen.whole >= whole, `${seen.whole} whole conversations on the first screen`);
      // Sideways, at least the first conversation's name is on the first screen.
      assert.ok(seen.firstTop + 40 <= height, `the first conversation starts at ${seen.firstTop} px`);
      // The bar's own links, Sign out included, on one row (not Sign out alone on a line of its own).
      const tops = await page.locator(".account").evaluate((account) => [...account.children]
        .filter((el) => el.getClientRects().length)
        .map((el) => el.getBoundingClientRect().top));
      assert.ok(Math.max(...tops) - Math.min(...tops) < 8, `the account links wrap: ${tops}`);

      // A tap unfolds them; they work as on a larger screen, and say what they now are.
      await summary.tap();
      await page.getByLabel("Order").selectOption({ label: "Longest waiting first" });
      await page.getByRole("button", { name: "Show" }).tap();
      await page.waitForURL(/sort=/);
      assert.equal(await page.locator(".filter-box > summary").innerText(),
        "Filters: Open · Anyone · All sites · Longest waiting first");
      assert.match(await page.locator("#conversations li").first().innerText(), /Hello number 1,/);
      assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), width, "nothing scrolls sideways");
      await context.close();
    });
}

test("on a larger screen the filters show in full, without the summary, also to screen readers", { timeout: 60000 },
  async () => {
    const { page, context } = await inbox(1280, 800);
    assert.equal(await page.locator(".filter-box > summary").isVisible(), false);
    for (const name of ["Status", "Assignee", "Site", "Order"]) {
      assert.equal(await page.getByLabel(name).isVisible(), true, `${name} shows`);
    }
    // What Chromium gives assistive technology, not what the page's DOM holds.
    const cdp = await context.newCDPSession(page);
    const { nodes } = await cdp.send("Accessibility.getFullAXTree");
    const exposed = nodes.filter((n) => n.role?.value === "combobox" && !n.ignored).map((n) => n.name?.value);
    assert.deepEqual(exposed, ["Status", "Assignee", "Site", "Order"]);
    assert.equal((await firstScreen(page)).whole, 5);
    await context.close();
  });

test("on a touch screen Enter starts a new line in the reply box and the Send button sends", { timeout: 60000 },
  async () => {
    const { porch, browser } = world;
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    await signIn(page, porch, AGENT.email);
    await page.goto(`${porch.url}/inbox`);
    assert.equal(await page.evaluate(() => matchMedia("(pointer: coarse) and (not (any-pointer: fine))").matches), true,
      "the emulated phone has only a coarse pointer");
    await page.locator("#conversations li a").first().tap();
    const box = page.locator("#reply-body");
    await box.waitFor();
    assert.equal(await page.locator("#reply-hint").innerText(), "notes are never shown to the visitor");
    await box.tap();
    await page.keyboard.type("First line");
    await page.keyboard.press("Enter");
    await page.keyboard.type("second line");
    assert.equal(await box.inputValue(), "First line\nsecond line", "Enter made a new line, sent nothing");
    // The buttons sit right under the box, before the hint.
    const send = await page.getByRole("button", { name: "Send reply" }).boundingBox();
    const hint = await page.locator("#reply-hint").boundingBox();
    assert.ok(send.y < hint.y, `Send at ${send.y} px, the hint at ${hint.y} px`);
    await page.getByRole("button", { name: "Send reply" }).tap();
    await page.locator(".message", { hasText: "second line" }).waitFor();
    assert.equal(await box.inputValue(), "");
    await context.close();
  });
