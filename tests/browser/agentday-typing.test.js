// Typing both ways, with the real widget and the real inbox: the visitor's typing shows on the
// agent's conversation page as "Visitor is typing…" and goes away when the message arrives; the
// agent's typing in the reply box shows in the widget as "Ana is typing" until the reply.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
const world = fixture({ site: "Acme Shop", agent: AGENT });

test("visitor and agent see each other typing", { timeout: 90000 }, async () => {
  const { porch, browser, host } = world;
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, AGENT.email);

  // Typing goes nowhere before the visitor's first message (there is no conversation yet).
  const v = await visitor(browser, host.url);
  await v.say("Hello");
  await page.goto(`${porch.url}/inbox`);
  await page.locator("#conversations li", { hasText: "Hello" }).locator("a").click();
  await page.waitForURL(/\/conversations\/\d+$/);
  // The counts arrive once the page's stream follows the hub: from then on nothing is missed.
  await page.locator("body[data-needs]").waitFor({ state: "attached" });
  const indicator = page.locator("#visitor-typing");
  assert.equal(await indicator.isHidden(), true);

  // The visitor types: the agent sees it; the message replaces it.
  await v.page.locator("[data-porch=input]").pressSequentially("Do you", { delay: 30 });
  await indicator.waitFor({ state: "visible" });
  assert.equal(await indicator.innerText(), "Visitor is typing…");
  await v.page.locator("[data-porch=input]").pressSequentially(" ship to Norway?", { delay: 10 });
  await v.page.locator("[data-porch=input]").press("Enter");
  await page.locator(".message-visitor", { hasText: "ship to Norway?" }).waitFor();
  await indicator.waitFor({ state: "hidden" });

  // The visitor types and leaves the box: the stop reaches the agent at once.
  await v.page.locator("[data-porch=input]").pressSequentially("Also", { delay: 30 });
  await indicator.waitFor({ state: "visible" });
  await v.page.locator("[data-porch=input]").blur();
  await indicator.waitFor({ state: "hidden", timeout: 3000 });

  // The agent types: the widget shows it; the reply replaces it.
  const widgetTyping = v.page.locator("[data-porch=typing]");
  assert.equal(await widgetTyping.isHidden(), true);
  const box = page.getByLabel("Your reply");
  await box.pressSequentially("Yes, we", { delay: 30 });
  await widgetTyping.waitFor({ state: "visible" });
  assert.match(await widgetTyping.innerText(), /^Ana is typing/);
  await box.pressSequentially(" do!", { delay: 10 });
  await box.press("Enter");
  await v.page.locator("[data-porch=message][data-author=agent]", { hasText: "Yes, we do!" }).waitFor();
  await widgetTyping.waitFor({ state: "hidden" });

  // The agent types, then stops for 5 s: the visitor's indicator goes away by itself.
  await box.pressSequentially("One more thing", { delay: 20 });
  await widgetTyping.waitFor({ state: "visible" });
  await waitFor("the agent's typing to stop", () => widgetTyping.isHidden(), { timeoutMs: 9000 });
  await v.context.close();
  await context.close();
});
