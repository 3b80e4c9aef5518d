// What spares a new admin and a busy agent a search: the site page names the origins whose pages
// were refused the chat (docs/widget.md, "Embedding"), and a conversation page links the visitor's
// other conversations (docs/admin.md). Both pages are also checked at 360 px for sideways scroll.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, hostOrigin, hostPage, signIn, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
const world = fixture({ site: "Acme Shop", agent: AGENT });

/** Opens `path` as Ana at 360 px and returns the page, after checking it does not scroll sideways. */
async function narrow(path) {
  const context = await world.browser.newContext({ viewport: { width: 360, height: 740 } });
  const page = await context.newPage();
  await signIn(page, world.porch, AGENT.email);
  await page.goto(`${world.porch.url}${path}`);
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 360, `${path} is ${width} px wide at 360`);
  return page;
}

test("a page on an origin the site does not allow is named on the site's page", async () => {
  // The same snippet on a page of another origin (another port), as with a missing `www.`.
  const stray = await hostPage(await hostOrigin(), world.site.snippet);
  const context = await world.browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(stray.url);
    await page.locator("[data-porch=launcher]").click();
    await page.getByText("This chat is not enabled for this website.").waitFor();
    // Nothing of the chat can work there, so nothing of it stays usable (docs/widget.md): from
    // the close (1008) that follows the error frame, a moment after the text shows.
    for (const control of ["input", "send", "attach", "data-button"]) {
      await waitFor(`${control} to be disabled`, () => page.locator(`[data-porch=${control}]`).isDisabled(),
        { timeoutMs: 5000 });
    }
  } finally {
    await context.close();
    await stray.close();
  }
  const strayOrigin = new URL(stray.url).origin;

  const sites = await narrow("/sites");
  await sites.getByRole("link", { name: "1 refused origin" }).click();
  const card = sites.getByRole("region", { name: "Pages refused the chat" });
  await card.waitFor();
  assert.match(await card.textContent(), new RegExp(`${strayOrigin.replace(/\./g, "\\.")} · 1 time, last`));
  // The host page's own origin, which the site allows, is not there.
  assert.ok(!(await card.textContent()).includes(new URL(world.host.url).origin));
  await sites.context().close();
});

test("a conversation page links the visitor's earlier conversation", async () => {
  const conversations = async () => (await world.porch.api("GET", "/conversations")).body.conversations || [];
  const v = await visitor(world.browser, world.host.url);
  await v.say("Where is my parcel?");
  const first = await waitFor("the conversation", async () => (await conversations())[0]?.id);
  const page = await narrow(`/conversations/${first}`);
  assert.equal(await page.getByRole("region", { name: "Other conversations" }).count(), 0);
  await page.getByRole("button", { name: "Close conversation" }).click();
  await page.getByRole("button", { name: "Reopen conversation" }).waitFor();
  // The reply box says what a reply to a closed conversation does.
  await page.locator("#closed-hint").getByText("their answer starts a new conversation").waitFor();
  await v.say("Me again");
  const second = await waitFor("a second conversation", async () =>
    (await conversations()).find((c) => c.id !== first)?.id);
  await v.context.close();

  // The closed conversation's page leads to the newer one, and back.
  await page.reload();
  const panel = page.getByRole("region", { name: "Other conversations" });
  await Promise.all([page.waitForURL(new RegExp(`/conversations/${second}$`)),
    panel.getByRole("link", { name: `Conversation ${second}` }).click()]);
  assert.ok(await page.locator("#closed-hint").isHidden(), "the open one's reply box has no closed hint");
  const back = page.getByRole("region", { name: "Other conversations" });
  assert.match(await back.textContent(), /Closed.*Where is my parcel\?/s);
  await back.getByRole("link", { name: `Conversation ${first}` }).waitFor();
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 360, `the conversation page is ${width} px wide at 360`);
  await page.context().close();
});
