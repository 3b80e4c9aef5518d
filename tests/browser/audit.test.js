// The audit log from an admin's side: a site change shows up on /audit with who made it, and the
// action filter narrows the list.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, setUpFirstAdmin } from "./harness.js";

let page;
const world = fixture({}, async ({ browser }) => {
  page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(15000);
});

test("an admin changes a site and finds the event on the audit page, filtered by action", { timeout: 60000 }, async () => {
  const { porch } = world;
  await setUpFirstAdmin(page, porch);

  await page.locator("#name").fill("Shop");
  await page.locator("#origins").fill("https://shop.example");
  await page.getByRole("button", { name: "Create site" }).click();
  await page.waitForURL(/\/sites\/s_/);
  await page.locator("#name").fill("Shop <b>two</b>");
  await page.getByRole("button", { name: "Save changes" }).click();
  await page.waitForURL(/notice=site-saved/);

  await page.getByRole("link", { name: "Audit log" }).click();
  await page.waitForURL(/\/audit/);
  const rows = page.locator("table.audit tbody tr");
  const updated = rows.filter({ hasText: "site.updated" });
  assert.equal(await updated.count(), 1);
  const text = await updated.innerText();
  assert.match(text, /ana@example\.com/);
  assert.match(text, /Shop <b>two<\/b>/, "the name is shown as text");
  assert.match(text, /127\.0\.0\.1/);
  assert.equal(await page.locator("table.audit b").count(), 0, "no markup from the name");
  assert.ok((await rows.filter({ hasText: "session.signed_in" }).count()) >= 1);

  await page.getByLabel("Action").fill("site.updated");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.waitForURL(/action=site\.updated/);
  assert.equal(await rows.count(), 1);
  assert.match(await rows.first().innerText(), /site\.updated/);
});

// Anyone who can reach the sign-in page can put 254 characters of their choosing in the log (a failed
// sign-in's email): they wrap in their cell instead of pushing the other columns out of view.
test("a long typed value wraps in its cell, the other columns stay in view", { timeout: 60000 }, async () => {
  const { porch, browser } = world;
  const stranger = await browser.newContext();
  const login = await stranger.newPage();
  await login.goto(`${porch.url}/login`);
  await login.getByLabel("Email").evaluate((input) => { input.removeAttribute("maxlength"); input.type = "text"; });
  await login.getByLabel("Email").fill(`${"a".repeat(240)}@example.com`);
  await login.getByLabel("Password").fill("not the password");
  await login.getByRole("button", { name: "Sign in" }).click();
  await login.getByText("Wrong email or password.").waitFor();
  await stranger.close();

  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${porch.url}/audit?action=session.sign_in_failed`);
  const row = page.locator("table.audit tbody tr", { hasText: "aaaaaaaa" });
  await row.waitFor();
  const action = await page.locator("table.audit th", { hasText: "Action" }).boundingBox();
  assert.ok(action.x + action.width <= 1280, `the Action column starts at ${action.x} px`);
  const detail = await page.locator("table.audit th", { hasText: "Detail" }).boundingBox();
  assert.ok(detail.x + detail.width <= 1280, `the Detail column ends at ${detail.x + detail.width} px`);
});
