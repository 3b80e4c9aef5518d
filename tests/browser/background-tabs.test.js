// Many admin tabs over plain HTTP (docs/admin.md, "Live updates"): a browser opens at most six
// HTTP/1.1 connections to a host and every signed-in page holds a live stream, so a seventh tab
// never loaded and a reply from any tab waited silently. A tab in the background closes its stream
// after 10 s (one tab, the keeper, keeps its own for alerts and passes the counts on), and opens
// it again when shown, catching up. Headless Chromium shows every tab, so a tab is sent to the
// background by overriding document.visibilityState.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
const world = fixture({ site: "Acme Tabs", agent: AGENT });

/** Tells the page it is hidden or shown, as a tab switch would. */
const setShown = (page, shown) => page.evaluate((state) => {
  Object.defineProperty(document, "visibilityState", { value: state, configurable: true });
  document.dispatchEvent(new Event("visibilitychange"));
}, shown ? "visible" : "hidden");

test("background tabs give their connection back: a ninth tab loads, a hidden inbox keeps its count and catches up when shown",
  { timeout: 120000 }, async () => {
    const { porch, host, browser } = world;
    const context = await browser.newContext();
    const open = async (path) => {
      const page = await context.newPage();
      page.setDefaultTimeout(15000);
      await page.goto(`${porch.url}${path}`);
      return page;
    };
    try {
      // The first tab takes the keeper's lease: its stream stays open whatever happens.
      const keeper = await context.newPage();
      keeper.setDefaultTimeout(15000);
      await signIn(keeper, porch, AGENT.email);
      await keeper.goto(`${porch.url}/account`);
      const inbox = await open("/inbox");
      const list = inbox.locator("#conversations");
      await waitFor("the inbox to be live", async () => (await list.getAttribute("data-state")) === "live");
      // Six streams now: every connection the browser allows this host.
      const others = [];
      for (let i = 0; i < 4; i++) others.push(await open("/account"));
      for (const page of [inbox, ...others]) await setShown(page, false);
      await waitFor("the hidden inbox to close its stream", async () =>
        (await list.getAttribute("data-state")) === "paused", { timeoutMs: 20000 });

      // Three more tabs load, and a reply goes out from one of them.
      for (let i = 0; i < 3; i++) others.push(await open("/account"));
      const v = await visitor(browser, host.url);
      await v.say("Anyone there with all these tabs?");
      const row = list.locator("li").first();
      // The hidden inbox counts it in its title without a stream of its own.
      await waitFor("the hidden tab's title to count the new chat", async () =>
        /^\(1\) /.test(await inbox.title()));
      assert.equal(await row.count(), 0, "the hidden list has no stream to add it");

      const { body } = await porch.api("GET", "/conversations");
      const id = body.conversations[0].id;
      const conversation = await open(`/conversations/${id}`);
      await conversation.locator("#reply-body").fill("Yes, right here.");
      await conversation.getByRole("button", { name: "Send reply" }).click();
      await v.page.locator("[data-porch=message][data-author=agent]", { hasText: "Yes, right here." }).waitFor();

      // Shown again, the inbox opens its stream and catches up on what it missed.
      await setShown(inbox, true);
      await waitFor("the inbox to be live again", async () => (await list.getAttribute("data-state")) === "live");
      await row.waitFor();
      assert.match(await row.innerText(), /Yes, right here\./);
      await v.context.close();
    } finally {
      await context.close();
    }
  });

test("the keeper's tab closing hands its lease on: a hidden tab opens its stream again for the alerts",
  { timeout: 90000 }, async () => {
    const { porch, browser } = world;
    const context = await browser.newContext();
    try {
      const keeper = await context.newPage();
      keeper.setDefaultTimeout(15000);
      await signIn(keeper, porch, AGENT.email);
      await keeper.goto(`${porch.url}/account`);
      const inbox = await context.newPage();
      inbox.setDefaultTimeout(15000);
      await inbox.goto(`${porch.url}/inbox`);
      const list = inbox.locator("#conversations");
      await setShown(inbox, false);
      await waitFor("the hidden inbox to close its stream", async () =>
        (await list.getAttribute("data-state")) === "paused", { timeoutMs: 20000 });
      await keeper.close();
      // Within a renewal (5 s): the hidden tab is the keeper now, and live while hidden.
      await waitFor("the hidden inbox to take over", async () =>
        (await list.getAttribute("data-state")) === "live", { timeoutMs: 15000 });
      assert.equal(await inbox.evaluate(() => JSON.parse(localStorage.getItem("porch-stream-keeper")) !== null), true);
    } finally {
      await context.close();
    }
  });

// A stream that ended with an error answer waits before its next try (30 s for a page's counts);
// hidden past 10 s meanwhile and shown again, it opens once: the try planned before the pause
// must not open a second stream beside it.
test("a stream paused during its reconnect wait opens once when shown", { timeout: 120000 }, async () => {
  const { porch, browser } = world;
  const context = await browser.newContext();
  await context.addInitScript(() => {
    const Original = window.EventSource;
    window.__sources = [];
    window.EventSource = class extends Original {
      constructor(...args) { super(...args); window.__sources.push(this); }
    };
  });
  const open = (page) => page.evaluate(() => window.__sources.filter((s) => s.readyState !== 2).length);
  try {
    const keeper = await context.newPage();
    keeper.setDefaultTimeout(15000);
    await signIn(keeper, porch, AGENT.email);
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    let refused = 0;
    await page.route("**/inbox/counts", (route) => {
      refused += 1;
      return route.fulfill({ status: 503, body: "busy" });
    });
    await page.goto(`${porch.url}/account`);
    await waitFor("the counts stream to be refused", async () => refused > 0);
    await setShown(page, false);
    await page.waitForTimeout(11000); // past the 10 s that close a background tab's stream
    await page.unroute("**/inbox/counts");
    await setShown(page, true);
    await waitFor("the stream to be open again", async () => (await open(page)) === 1);
    await page.waitForTimeout(21000); // past the 30 s try planned before the pause
    assert.equal(await open(page), 1);
    assert.equal(await page.evaluate(() => window.__sources.length), 2, "the refused one, then one");
  } finally {
    await context.close();
  }
});

// The conversation on screen is read as its messages arrive, so the server leaves it out of that
// page's counts; a message that arrives while the tab is in the background stays unread until the
// tab is shown, and the tab's own title counts it meanwhile (the page adds the counts' `here`).
test("a conversation tab in the background counts a message in its own title until it is shown",
  { timeout: 90000 }, async () => {
    const { porch, host, browser } = world;
    const context = await browser.newContext();
    const counted = async (page) => Number((await page.title()).match(/^\((\d+)\) /)?.[1] || 0);
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(15000);
      await signIn(page, porch, AGENT.email);
      const v = await visitor(browser, host.url);
      await v.say("Is the blue one in stock?");
      const { body } = await porch.api("GET", "/conversations");
      const id = body.conversations[0].id;
      await page.goto(`${porch.url}/conversations/${id}`);
      const messages = page.locator("#messages");
      await waitFor("the conversation to be live", async () => (await messages.getAttribute("data-state")) === "live");
      await waitFor("the counts to be known", async () => (await page.locator("body").getAttribute("data-needs")) !== null);
      const before = await counted(page);

      await setShown(page, false);
      await v.say("And in size 9?");
      await page.locator(".message-visitor", { hasText: "And in size 9?" }).waitFor();
      await waitFor("the hidden tab's title to count its own conversation", async () =>
        (await counted(page)) === before + 1);
      await setShown(page, true);
      await waitFor("the title to drop it once shown", async () => (await counted(page)) === before);
      // Shown, the page marked it read on the server: a new tab does not count it.
      const inbox = await context.newPage();
      await inbox.goto(`${porch.url}/inbox`);
      await waitFor("the new tab's counts", async () => (await inbox.locator("body").getAttribute("data-needs")) !== null);
      assert.equal(await counted(inbox), before);

      // Read elsewhere (a second tab on it) while this one is in the background: it leaves this
      // tab's title too, without the tab being shown.
      await setShown(page, false);
      await v.say("And in blue?");
      await waitFor("the hidden tab to count it", async () => (await counted(page)) === before + 1);
      const second = await context.newPage();
      await second.goto(`${porch.url}/conversations/${id}`);
      await waitFor("the reading elsewhere to reach the hidden tab", async () => (await counted(page)) === before);
      await second.close();
      // A reply (here, through the API) makes nothing unread: the hidden tab's title stays.
      await porch.api("POST", `/conversations/${id}/messages`, { body: "Yes, in blue too." });
      await page.locator(".message-agent", { hasText: "Yes, in blue too." }).waitFor();
      assert.equal(await counted(page), before);
      await v.context.close();
    } finally {
      await context.close();
    }
  });
