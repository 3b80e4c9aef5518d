// The offline capture: after the first message the panel offers to take an email address for replies while
// the visitor is away; an invalid address is refused, a valid one is stored and not asked for again.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture } from "./harness.js";

const world = fixture({ site: "Acme Test", email: true });

test("a visitor leaves an email address after the first message", { timeout: 60000 }, async () => {
  const { host, browser } = world;
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  await page.goto(host.url);
  await page.locator("[data-porch=launcher]").click();
  const capture = page.locator("[data-porch=email]");
  await page.locator("[data-porch=status][data-state=connected]").waitFor();
  assert.equal(await capture.isVisible(), false, "offered before any message");

  await page.locator("[data-porch=input]").fill("Is anyone there?");
  await page.locator("[data-porch=input]").press("Enter");
  await capture.waitFor({ state: "visible" });

  await page.locator("[data-porch=email-input]").fill("not-an-address");
  await capture.locator("button").click();
  await page.locator("[data-porch=error]").waitFor({ state: "visible" });
  assert.equal(await page.locator("[data-porch=error]").innerText(), "Please check the email address.");

  await page.locator("[data-porch=email-input]").fill("alice@example.org");
  await capture.locator("button").click();
  const saved = page.locator("[data-porch=email-saved]");
  await saved.waitFor();
  assert.match(await saved.innerText(), /alice@example\.org/);

  // Not asked again after a reload.
  await page.reload();
  // The launcher reopens a chat that was open; open it by hand only if it did not.
  await page.waitForTimeout(1000);
  if (!(await page.locator("[data-porch=panel]").isVisible())) await page.locator("[data-porch=launcher]").click();
  await page.locator("[data-porch=status][data-state=connected]").waitFor();
  await page.locator("[data-porch=input]").fill("Still me");
  await page.locator("[data-porch=input]").press("Enter");
  await page.locator("[data-porch=message][data-author=visitor][data-status=sent]").last().waitFor();
  await page.waitForTimeout(300);
  assert.equal(await capture.isVisible(), false, "asked again after the address was saved");
  await context.close();
});
