// A closed conversation left open in a tab when its visitor writes again: their message starts a
// newer conversation, and the open page says so at once, in the side panel (no more Reopen) and
// in the reply box's hint, and drops "Reopen undoes it until the visitor writes again". An
// outside check found the page offering Reopen until it was reloaded. docs/admin.md, "Live updates".
import { test } from "node:test";
import assert from "node:assert/strict";
import { agentPage, fixture, openConversation, visitor } from "./harness.js";

const AGENT = { email: "cy@example.com", name: "Cy" };
const world = fixture({ site: "Acme Shop", agent: AGENT });

test("a closed conversation's open page learns of the visitor's newer one", { timeout: 60000 }, async () => {
  const { porch, browser, host } = world;
  const { context, page } = await agentPage(browser, porch, AGENT.email);
  const v = await visitor(browser, host.url);
  await v.say("My address is wrong");
  const first = await openConversation(page, porch, "address is wrong");

  await page.getByRole("button", { name: "Close conversation" }).click();
  await page.getByRole("status").filter({ hasText: "Reopen undoes it" }).waitFor();
  await page.getByRole("button", { name: "Reopen conversation" }).waitFor();

  await v.page.locator("[data-porch=closed]").waitFor();
  await v.say("Oops, one more thing: it's 12 Main St");
  // The visitor's newer conversation, as the API lists it.
  const listed = (await porch.api("GET", "/conversations")).body.conversations;
  const newer = Math.max(...listed.map((c) => c.id));
  assert.ok(newer > first);
  const link = `/conversations/${newer}`;
  await page.locator(`#conversation-aside a[href="${link}"]`).first().waitFor();
  assert.equal(await page.getByRole("button", { name: "Reopen conversation" }).count(), 0, "Reopen is still offered");
  // The hint and the notice follow in an event of their own.
  await page.locator(`#closed-hint a[href="${link}"]`).waitFor({ state: "attached" });
  await page.getByText("Reopen undoes it").waitFor({ state: "detached" });

  // A page whose stream starts only after the visitor wrote again (a reconnect, a slow start) has
  // no event to hear: its stream looks, and tells it all the same.
  const w = await visitor(browser, host.url);
  await w.say("Second visitor here");
  const second = await openConversation(page, porch, "Second visitor here");
  assert.equal((await porch.api("POST", `/conversations/${second}/close`, {})).status, 200);
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await page.route(`**/conversations/${second}/events*`, async (route) => { await held; await route.continue(); });
  await page.goto(`${porch.url}/conversations/${second}`);
  await page.getByRole("button", { name: "Reopen conversation" }).waitFor();
  await w.page.locator("[data-porch=closed]").waitFor();
  await w.say("And again");
  release();
  await page.locator(`#closed-hint a[href^="/conversations/"]`).waitFor({ state: "attached" });
  await page.getByRole("button", { name: "Reopen conversation" }).waitFor({ state: "detached" });
  await w.context.close();
  await v.context.close();
  await context.close();
});
