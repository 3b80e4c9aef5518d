// A conversation page's done-notice ("Conversation closed. …") is news once: when a colleague
// changes the status meanwhile (here through the API), the side panel follows live and the
// notice, no longer true, goes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
const world = fixture({ site: "Acme Shop", agent: AGENT });

test("a colleague's reopening takes away the page's 'Conversation closed' notice", { timeout: 60000 }, async () => {
  const { porch, browser, host } = world;
  const v = await visitor(browser, host.url);
  await v.say("Can you close this?");
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, AGENT.email);
  await page.goto(`${porch.url}/inbox`);
  await page.locator("#conversations li a").first().click();
  await page.waitForURL(/\/conversations\/\d+$/);
  const id = page.url().match(/(\d+)$/)[1];
  await Promise.all([page.waitForURL(/notice=closed|\/conversations\/\d+$/),
    page.getByRole("button", { name: "Close conversation" }).click()]);
  const notice = page.locator("main .notice-success");
  await waitFor("the notice", async () => (await notice.count()) === 1
    && (await notice.textContent()).startsWith("Conversation closed."));
  // Live from here: wait for the stream to be open before the colleague acts.
  await page.locator("#conversation-aside[data-open=false]").waitFor();
  const reopened = await porch.api("POST", `/conversations/${id}/reopen`, {});
  assert.equal(reopened.status, 200, JSON.stringify(reopened.body));
  await page.locator("#conversation-aside[data-open=true]").waitFor();
  assert.equal(await notice.count(), 0, "the stale notice stayed");
  await page.context().close();
  await v.context.close();
});
