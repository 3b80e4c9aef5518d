// The account page: API tokens (make one, see it once, use it against the API, revoke it after
// the confirmation page, and the API now answers 401), and signing out everywhere else.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, setUpFirstAdmin, signIn, waitFor } from "./harness.js";

let page;
const world = fixture({}, async ({ browser }) => {
  page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(15000);
});

async function listConversations(porch, token) {
  const answer = await fetch(`${porch.url}/api/v1/conversations`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return answer.status;
}

test("a user makes a token, sees it once, uses it, revokes it, and the API refuses it", { timeout: 60000 }, async () => {
  const { porch } = world;
  await setUpFirstAdmin(page, porch);

  await page.goto(`${porch.url}/account`);
  await page.getByLabel("Name", { exact: true }).fill("Dashboard <i>1</i>");
  await page.getByLabel("Scope").selectOption("read");
  await page.getByLabel("Expires").selectOption("30");
  await page.getByRole("button", { name: "Make token" }).click();
  const token = (await page.locator("#new-token").innerText()).trim();
  assert.match(token, /^pat_[A-Za-z0-9_-]{43}$/);

  const row = page.locator("#api-tokens tbody tr");
  assert.equal(await row.count(), 1);
  const listed = await row.first().innerText();
  assert.match(listed, /Dashboard <i>1<\/i>/, "the name is text");
  assert.match(listed, /read/);
  assert.match(listed, /never/, "not used yet");
  assert.ok(!listed.includes(token), "the list never shows the token");

  assert.equal(await listConversations(porch, token), 200);
  // The last use is written off the request's path: reload until it shows.
  await waitFor("the last use to show", async () => {
    await page.goto(`${porch.url}/account`);
    return !/never\s+Revoke/.test(await row.first().innerText());
  });
  assert.equal(await page.locator("#new-token").count(), 0, "shown only once");
  assert.ok(!(await page.content()).includes(token));

  await row.first().getByRole("link", { name: /Revoke/ }).click();
  await page.waitForURL(/\/account\/tokens\/\d+\/revoke/);
  await page.getByRole("button", { name: "Revoke token" }).click();
  await page.waitForURL(/notice=token-revoked/);
  assert.equal(await row.count(), 0);
  assert.equal(await listConversations(porch, token), 401);
});

test("ending my other sessions: the other browser's open inbox is signed out, this one stays", { timeout: 60000 }, async () => {
  const { porch, browser } = world;
  // Ana made her account in the test above; she is signed in on `page` and now on a second browser.
  const other = await (await browser.newContext()).newPage();
  other.setDefaultTimeout(15000);
  await signIn(other, porch, "ana@example.com");
  await other.goto(`${porch.url}/inbox`);
  await page.goto(`${porch.url}/account`);
  await page.getByRole("button", { name: "End my other sessions" }).click();
  await page.waitForURL(/notice=signed-out-elsewhere/);
  assert.match(await page.locator("main").innerText(), /Your other sessions were signed out/);
  // The open inbox there learns it at once from its live stream, without a reload.
  await other.getByText("Signed out: this page is no longer live.").waitFor();
  await other.goto(`${porch.url}/inbox`);
  assert.match(new URL(other.url()).pathname, /^\/login/);
  await page.goto(`${porch.url}/inbox`);
  assert.equal(new URL(page.url()).pathname, "/inbox", "this session stays");
  await other.context().close();
});
