// The audit log from an admin's side: a site change shows up on /audit with who made it, and the
// action filter narrows the list.
import { test } from "node:test";
import assert from "node:assert/strict";
import { PASSWORD, fixture, setupToken } from "./harness.js";

let page;
const world = fixture({}, async ({ browser }) => {
  page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(15000);
});

test("an admin changes a site and finds the event on the audit page, filtered by action", { timeout: 60000 }, async () => {
  const { porch } = world;
  await page.goto(`${porch.url}/setup`);
  await page.getByLabel("Setup token").fill(await setupToken(porch));
  await page.getByLabel("Your name").fill("Ana");
  await page.getByLabel("Email").fill("ana@example.com");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Create admin account" }).click();
  await page.waitForURL(/\/sites\/new/);

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
