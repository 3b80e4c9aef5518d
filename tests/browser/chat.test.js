// The acceptance flow: a visitor on another site's page chats with an agent who answers through the API.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { fixture, watch, waitFor, visitor, ARTIFACTS } from "./harness.js";

const world = fixture({ site: "Acme Test", agent: { email: "a@example.com", name: "Ana" } });

const VISITOR_TEXT = "Hello! Do you ship to Norway? <img src=x onerror=window.__xss=1>";
const AGENT_TEXT = "Hi, this is Ana. Yes, we do: see https://example.com/shipping <b>not bold</b>";

test("a visitor chats with an agent, live, and finds the conversation again after a reload", { timeout: 120000 },
  async () => {
    const { porch, site, host, browser } = world;
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    const seen = watch(page, porch.url);

    // 1. The page loads: the launcher shows, and nothing at all goes to Porch before the click.
    await page.goto(host.url);
    await page.waitForLoadState("networkidle");
    assert.deepEqual(seen.requests, [], "requests to Porch before the click");
    assert.deepEqual(seen.sockets, [], "websockets to Porch before the click");
    const launcher = page.locator("[data-porch=launcher]");
    await launcher.waitFor({ state: "visible" });
    const look = await launcher.evaluate((el) => {
      const s = getComputedStyle(el);
      const r = el.getBoundingClientRect();
      return { fontSize: s.fontSize, color: s.color, display: s.display, right: innerWidth - r.right,
        bottom: innerHeight - r.bottom, label: el.getAttribute("aria-label"), tag: el.tagName };
    });
    assert.equal(look.tag, "BUTTON");
    assert.equal(look.label, "Chat with us");
    assert.equal(look.fontSize, "15px", "host-page CSS leaked into the launcher");
    assert.notEqual(look.color, "rgb(255, 0, 0)", "host-page CSS leaked into the launcher");
    assert.ok(look.right >= 0 && look.right < 40 && look.bottom >= 0 && look.bottom < 40,
      `launcher not at the bottom right: ${JSON.stringify(look)}`);
    // It is on top: the element at its centre is the launcher's host.
    const onTop = await launcher.evaluate((el) => {
      const r = el.getBoundingClientRect();
      return document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2)?.id;
    });
    assert.equal(onTop, "porch-chat");

    // 2. Click: the panel opens with the site name and greeting, focus in the message box.
    await launcher.click();
    const panel = page.locator("[data-porch=panel]");
    await panel.waitFor({ state: "visible" });
    await page.locator("[data-porch=greeting]").waitFor({ state: "visible" });
    assert.ok((await page.locator("[data-porch=greeting]").innerText()).trim().length > 0, "empty greeting");
    assert.equal(await panel.locator("h2").innerText(), "Acme Test");
    await waitFor("focus in the message box", () => page.evaluate(() =>
      document.getElementById("porch-chat").shadowRoot.activeElement?.dataset.porch === "input"));
    await waitFor("status connected", async () =>
      (await page.locator("[data-porch=status]").getAttribute("data-state")) === "connected");
    assert.equal(await launcher.getAttribute("aria-expanded"), "true");

    // 3. Send: the bubble goes from sending to sent; the conversation exists on the server.
    await page.locator("[data-porch=input]").fill(VISITOR_TEXT);
    await page.locator("[data-porch=input]").press("Enter");
    const mine = page.locator("[data-porch=message][data-author=visitor]");
    await mine.first().waitFor();
    await page.locator("[data-porch=message][data-author=visitor][data-status=sent]").waitFor();
    assert.equal(await mine.count(), 1);
    assert.equal(await mine.locator(".bubble").innerText(), VISITOR_TEXT, "visitor text not shown verbatim");
    assert.equal(await page.evaluate(() => window.__xss), undefined, "visitor text was parsed as HTML");
    assert.equal(await page.locator("[data-porch=input]").inputValue(), "", "composer not cleared");

    const { body: list } = await porch.api("GET", "/conversations");
    const mineOnServer = list.conversations.filter((c) => c.site === site.key);
    assert.equal(mineOnServer.length, 1, `conversations: ${JSON.stringify(list)}`);
    const conv = mineOnServer[0].id;
    const { body: stored } = await porch.api("GET", `/conversations/${conv}/messages`);
    assert.deepEqual(stored.messages.map((m) => [m.author, m.body]), [["visitor", VISITOR_TEXT]]);

    // 4. The agent types, then answers: both show up live.
    const typed = await porch.api("POST", `/conversations/${conv}/typing`, { active: true });
    assert.equal(typed.status, 204);
    const typing = page.locator("[data-porch=typing]");
    await typing.waitFor({ state: "visible" });
    assert.match(await typing.innerText(), /Ana is typing/);

    const reply = await porch.api("POST", `/conversations/${conv}/messages`, { body: AGENT_TEXT });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    const theirs = page.locator("[data-porch=message][data-author=agent]");
    await theirs.first().waitFor();
    assert.equal(await theirs.locator(".bubble").innerText(), AGENT_TEXT);
    assert.equal(await theirs.locator(".name").innerText(), "Ana");
    assert.equal(await theirs.locator(".bubble b").count(), 0, "agent text was parsed as HTML");
    assert.equal(await theirs.locator(".bubble a").getAttribute("href"), "https://example.com/shipping");
    await typing.waitFor({ state: "hidden" }); // a reply ends the typing indicator

    await mkdir(ARTIFACTS, { recursive: true });
    await porch.api("POST", `/conversations/${conv}/typing`, { active: true });
    await typing.waitFor({ state: "visible" });
    await page.screenshot({ path: path.join(ARTIFACTS, "panel.png") });

    // 5. Reload: the chat reopens by itself and the history is back, each message once.
    await page.reload();
    await page.locator("[data-porch=message][data-author=agent]").waitFor();
    await page.locator("[data-porch=message][data-author=visitor][data-status=sent]").waitFor();
    assert.equal(await page.locator("[data-porch=message][data-author=visitor]").count(), 1);
    assert.equal(await page.locator("[data-porch=message][data-author=agent]").count(), 1);
    const order = await page.locator("[data-porch=message] .bubble").allInnerTexts();
    assert.deepEqual(order, [VISITOR_TEXT, AGENT_TEXT]);
    assert.ok(await panel.isVisible(), "panel did not reopen after the reload");

    // 6. Escape closes the panel and focus goes back to the launcher; the launcher reopens it.
    await page.locator("[data-porch=input]").focus();
    await page.keyboard.press("Escape");
    await panel.waitFor({ state: "hidden" });
    assert.equal(await launcher.getAttribute("aria-expanded"), "false");
    await page.keyboard.press("Enter"); // the launcher has focus
    await panel.waitFor({ state: "visible" });

    assert.deepEqual(seen.errors, [], "uncaught errors in the page");
    await context.close();
  });

test("on a phone the open panel fills the screen", { timeout: 60000 }, async () => {
  const { host, browser } = world;
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  await page.goto(host.url);
  await page.locator("[data-porch=launcher]").tap();
  const panel = page.locator("[data-porch=panel]");
  await panel.waitFor({ state: "visible" });
  await page.locator("[data-porch=greeting]").waitFor({ state: "visible" });
  // Polled: the opening animation scales the panel for a moment.
  await waitFor("a full-screen panel", async () => {
    const box = await panel.boundingBox();
    return [box.x, box.y, box.width, box.height].join() === "0,0,390,844";
  });
  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, "panel-phone.png") });
  await context.close();
});

test("without email for the site the panel never asks for an address nor promises a reply by email",
  { timeout: 60000 }, async () => {
    const { host, browser } = world;
    // Nobody in the inbox, first message stored: where email is on, the address form shows now.
    const v = await visitor(browser, host.url);
    try {
      await v.say("Anyone there?");
      assert.equal(await v.page.locator("[data-porch=email]").isHidden(), true);
      assert.doesNotMatch(await v.page.locator("[data-porch=panel]").innerText(), /by email/i);
    } finally {
      await v.context.close();
    }
  });

test("what the visitor was typing is back after a reload, and gone once sent", { timeout: 60000 }, async () => {
  const { host, browser } = world;
  const v = await visitor(browser, host.url);
  try {
    const box = v.page.locator("[data-porch=input]");
    await box.fill("Half a question about");
    // The panel was open, so it opens again on the reloaded page, with the text in its box.
    await v.page.reload();
    await waitFor("the box to hold the draft", async () =>
      (await box.count()) === 1 && (await box.inputValue()) === "Half a question about");
    await box.press("End");
    await box.pressSequentially(" delivery times?");
    await box.press("Enter");
    await v.page.locator("[data-porch=message][data-author=visitor][data-status=sent]",
      { hasText: "Half a question about delivery times?" }).waitFor();
    assert.equal(await box.inputValue(), "");
    await v.page.reload();
    await v.page.locator("[data-porch=message][data-author=visitor]", { hasText: "delivery times?" }).waitFor();
    assert.equal(await box.inputValue(), "", "a sent message is no draft");
  } finally {
    await v.context.close();
  }
});
