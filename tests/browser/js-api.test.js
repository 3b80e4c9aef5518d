// The page's JS API (docs/widget.md, "The JS API"): Porch.open/close/toggle/on/off/identify/push from a host
// page of another origin, a widget started without the button ("launcher": false) and opened from the
// site's own button, calls queued before the snippet ran, and nothing requested before the first call
// that needs the panel.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, hostOrigin, hostPage, watch, waitFor } from "./harness.js";

const world = fixture({ agent: { email: "a@example.com", name: "Ana" } });

// What a site pastes before the snippet: the queue, handlers recording every event, an early identify.
const QUEUE = `<script>
  window.events = [];
  window.Porch = window.Porch || [];
  Porch.push(["on", "open", () => events.push("open")]);
  Porch.push(["on", "close", () => events.push("close")]);
  Porch.push(["on", "message", (m) => events.push(m)]);
  Porch.push(["identify", { id: "u-42", name: "Ann Example", email: "ann@example.com" }]);
</script>`;

/** A site and a host page on its own origin; `extra` goes before the snippet, `launcher: false` hides the button. */
async function site(name, { launcher = true, extra = "", headers = {} } = {}) {
  const origin = await hostOrigin();
  const added = await world.porch.addSite(name, origin);
  let snippet = added.snippet;
  if (!launcher) {
    snippet = snippet.replace(')({"', ')({"launcher":false,"');
    assert.notEqual(snippet, added.snippet, "the snippet's config was not found");
  }
  const host = await hostPage(origin, extra + snippet, headers);
  return { host, key: added.key };
}

const shadow = (page, f) => page.evaluate(f);

test("a widget started without the button opens from the site's own button and requests nothing before",
  { timeout: 90000 }, async () => {
    const { porch, browser } = world;
    const { host, key } = await site("Hidden", {
      launcher: false,
      // The site's own button opens the chat.
      extra: `${QUEUE}<script>document.getElementById("own").addEventListener("click", () => Porch.open());</script>`,
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    const seen = watch(page, porch.url);
    try {
      await page.goto(host.url);
      await page.waitForLoadState("networkidle");
      // identify and on (queued, and called again now) load nothing.
      await page.evaluate(() => {
        Porch.identify({ id: "u-42", name: "Ann Example" });
        Porch.on("open", () => {});
        Porch.close();
      });
      await page.waitForTimeout(500);
      assert.deepEqual(seen.requests, [], "requests to Porch before open()");
      assert.deepEqual(seen.sockets, [], "websockets to Porch before open()");
      assert.equal(await page.evaluate(() => window.__porch), undefined);
      assert.equal(await page.locator("[data-porch=launcher]").isVisible(), false, "the button shows");
      assert.equal(await page.locator("[data-porch=launcher]").count(), 1);

      // The site's own button: the panel opens, focus goes in, `open` fires once.
      await page.locator("#own").focus();
      await page.keyboard.press("Enter");
      const panel = page.locator("[data-porch=panel]");
      await panel.waitFor({ state: "visible" });
      await page.locator("[data-porch=status][data-state=connected]").waitFor();
      await waitFor("focus in the message box", () => shadow(page, () =>
        document.getElementById("porch-chat").shadowRoot.activeElement?.dataset.porch === "input"));
      assert.ok(seen.requests.some((u) => u.endsWith("/widget/panel.js")), "panel.js was not loaded");
      assert.deepEqual(await page.evaluate(() => events), ["open"]);
      // The panel sits in the corner by itself (no button below it).
      const gap = await panel.evaluate((el) => innerHeight - el.getBoundingClientRect().bottom);
      assert.ok(gap >= 0 && gap <= 24, `panel ${gap}px above the bottom`);
      // identify before the panel loaded is on the config the panel reads.
      assert.deepEqual(await page.evaluate(() => window.__porch.c.user),
        { id: "u-42", name: "Ann Example" });

      // Porch.open() while open changes nothing; close() closes and gives focus back to the site's button.
      await page.evaluate(() => Porch.open());
      await page.evaluate(() => Porch.close());
      await panel.waitFor({ state: "hidden" });
      assert.equal(await page.evaluate(() => document.activeElement?.id), "own");
      assert.deepEqual(await page.evaluate(() => events), ["open", "close"]);
      assert.equal(await page.locator("[data-porch=launcher]").isVisible(), false, "the button showed up");

      // toggle, twice; Escape in the panel reports `close` too.
      await page.evaluate(() => Porch.toggle());
      await panel.waitFor({ state: "visible" });
      await page.evaluate(() => Porch.toggle());
      await panel.waitFor({ state: "hidden" });
      await page.evaluate(() => Porch.push(["open"]));
      await panel.waitFor({ state: "visible" });
      await page.locator("[data-porch=input]").press("Escape");
      await panel.waitFor({ state: "hidden" });
      assert.deepEqual(await page.evaluate(() => events), ["open", "close", "open", "close", "open", "close"]);

      // message: the visitor's own once stored, then the agent's reply.
      await page.evaluate(() => Porch.open());
      await page.locator("[data-porch=input]").fill("Do you ship to Norway?");
      await page.locator("[data-porch=input]").press("Enter");
      await waitFor("the visitor's message event", () => page.evaluate(() =>
        events.some((e) => e.author === "visitor")));
      const { body: list } = await porch.api("GET", "/conversations");
      const conv = list.conversations.find((c) => c.site === key).id;
      const reply = await porch.api("POST", `/conversations/${conv}/messages`, { body: "Yes, we do." });
      assert.equal(reply.status, 201, JSON.stringify(reply.body));
      await waitFor("the agent's message event", () => page.evaluate(() =>
        events.some((e) => e.author === "agent")));
      const messages = await page.evaluate(() => events.filter((e) => typeof e === "object"));
      assert.equal(messages.length, 2, JSON.stringify(messages));
      const [mine, theirs] = messages;
      assert.equal(mine.body, "Do you ship to Norway?");
      assert.equal(mine.name, null);
      assert.equal(theirs.body, "Yes, we do.");
      assert.equal(theirs.name, "Ana");
      assert.ok(theirs.id > mine.id && Math.abs(theirs.at - Date.now()) < 60000, JSON.stringify(theirs));
      assert.deepEqual(seen.errors, [], "errors thrown into the host page");

      // After a reload the history shown is not news: no message events for it.
      await page.reload();
      await page.evaluate(() => Porch.open());
      await page.locator("[data-porch=message][data-author=agent]").waitFor();
      await page.waitForTimeout(300);
      assert.deepEqual(await page.evaluate(() => events.filter((e) => typeof e === "object")), []);

      // identify on a running panel starts the visitor's session again: the history it shows is not
      // news either (it fired `message` again for every message shown), only what comes after it.
      await page.evaluate(() => Porch.identify({ id: "u-42", name: "Ann Example" }));
      await page.locator("[data-porch=message][data-author=agent]").waitFor();
      await page.locator("[data-porch=status][data-state=connected]").waitFor();
      const later = await porch.api("POST", `/conversations/${conv}/messages`, { body: "Anything else?" });
      assert.equal(later.status, 201, JSON.stringify(later.body));
      await waitFor("the new reply's message event", () => page.evaluate(() =>
        events.some((e) => e.body === "Anything else?")));
      assert.deepEqual(await page.evaluate(() => events.filter((e) => typeof e === "object").map((e) => e.body)),
        ["Anything else?"]);
    } finally {
      await context.close();
      await host.close();
    }
  });

test("calls queued before the snippet run; off() removes a handler; a throwing handler harms nothing",
  { timeout: 90000 }, async () => {
    const { porch, browser } = world;
    const early = `<script>
      window.calls = [];
      window.Porch = window.Porch || [];
      const bad = () => { throw new Error("the site's own bug"); };
      const gone = () => calls.push("removed handler ran");
      Porch.push(["on", "open", bad]);
      Porch.push(["on", "open", gone]);
      Porch.push(["off", "open", gone]);
      Porch.push(["on", "open", () => calls.push("open")]);
      Porch.push(["on", "close", function () { calls.push("close with " + arguments.length + " arguments"); }]);
      Porch.push(["open"]);
    </script>`;
    const { host } = await site("Queued", { extra: early });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    const seen = watch(page, porch.url);
    try {
      await page.goto(host.url);
      // The queued open() opened the panel without a click, and the button is there.
      await page.locator("[data-porch=panel]").waitFor({ state: "visible" });
      await page.locator("[data-porch=status][data-state=connected]").waitFor();
      assert.equal(await page.locator("[data-porch=launcher]").isVisible(), true);
      assert.equal(await page.locator("[data-porch=launcher]").getAttribute("aria-expanded"), "true");
      assert.deepEqual(await page.evaluate(() => calls), ["open"]);
      // The handler's own error is reported as the page's, after the chat went on.
      await waitFor("the handler's error", () => seen.errors.length === 1);
      assert.match(seen.errors[0].message, /the site's own bug/);
      // push() still works once the snippet ran, and so does the button.
      await page.evaluate(() => Porch.push(["close"]));
      await page.locator("[data-porch=panel]").waitFor({ state: "hidden" });
      await page.locator("[data-porch=launcher]").click();
      await page.locator("[data-porch=panel]").waitFor({ state: "visible" });
      assert.deepEqual(await page.evaluate(() => calls), ["open", "close with 0 arguments", "open"]);
      await waitFor("the handler's second error", () => seen.errors.length === 2);
      // Unknown calls and bad arguments are ignored, not thrown.
      await page.evaluate(() => { Porch.push(["nope"]); Porch.push(null); Porch.on("open"); Porch.toggle(); });
      // Names an object's prototype has, and names that are no string, are unknown names too (they threw).
      const thrown = await page.evaluate(() => {
        const said = [];
        const noString = Object.create(null);
        const throwing = { toString() { throw new Error("boom"); } };
        for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty", noString, throwing, Symbol("x")]) {
          for (const call of [() => Porch.on(name, () => {}), () => Porch.off(name, () => {})]) {
            try { call(); } catch (e) { said.push(`${String(typeof name)}: ${e.message}`); }
          }
        }
        return said;
      });
      assert.deepEqual(thrown, []);
      await page.locator("[data-porch=panel]").waitFor({ state: "hidden" });
      await page.waitForTimeout(300);
      assert.deepEqual(seen.errors.map((e) => e.message), ["the site's own bug", "the site's own bug"]);
    } finally {
      await context.close();
      await host.close();
    }
  });

test("a close() queued before the snippet wins over reopening the chat on the next page", { timeout: 60000 }, async () => {
  const { browser } = world;
  const early = `<script>
    window.Porch = window.Porch || [];
    if (new URLSearchParams(location.search).has("close")) Porch.push(["close"]);
  </script>`;
  const { host, key } = await site("Closed early", { extra: early });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const mark = () => page.evaluate((k) => sessionStorage.getItem(`porch:${k}:open`), key);
  const connected = page.locator("[data-porch=status][data-state=connected]");
  const loaded = () => connected.waitFor({ state: "attached" }); // shown or not
  try {
    await page.goto(host.url);
    await page.locator("[data-porch=launcher]").click();
    await connected.waitFor();
    assert.equal(await mark(), "open");
    // The next page of the tab asks for the chat closed before the snippet runs: it stays closed (connected,
    // as in a tab where the visitor closed it) and the tab remembers it closed.
    await page.goto(`${host.url}?close=1`);
    await loaded();
    assert.equal(await page.locator("[data-porch=panel]").isVisible(), false);
    assert.equal(await page.locator("[data-porch=launcher]").getAttribute("aria-expanded"), "false");
    assert.equal(await mark(), "closed");
    // So the page after it does not open the chat by itself either.
    await page.goto(host.url);
    await loaded();
    assert.equal(await page.locator("[data-porch=panel]").isVisible(), false);
  } finally {
    await context.close();
    await host.close();
  }
});

// A cross-origin isolated page loads no script or stylesheet of another origin that does not allow it
// (Cross-Origin-Resource-Policy); before 2026-12-07 such a page always said "Chat is unavailable".
test("a cross-origin isolated page (COEP require-corp) chats", { timeout: 60000 }, async () => {
  const { browser } = world;
  const { host } = await site("Isolated", {
    headers: { "cross-origin-opener-policy": "same-origin", "cross-origin-embedder-policy": "require-corp" },
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  try {
    await page.goto(host.url);
    assert.equal(await page.evaluate(() => window.crossOriginIsolated), true, "the policy applies");
    await page.locator("[data-porch=launcher]").click();
    await page.locator("[data-porch=status][data-state=connected]").waitFor();
    await page.locator("[data-porch=input]").fill("Hello from an isolated page");
    await page.keyboard.press("Enter");
    await page.locator("[data-porch=message][data-status=sent]").waitFor();
    assert.equal(await page.locator("[data-porch=unavailable]").isVisible(), false);
  } finally {
    await context.close();
    await host.close();
  }
});

test("an element with id=\"Porch\" on the page does not stop the widget", { timeout: 60000 }, async () => {
  const { browser } = world;
  const { host } = await site("Porch Inc", { extra: `<div id="Porch">Porch Inc, since 1999</div>` });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  try {
    await page.goto(host.url);
    await page.locator("[data-porch=launcher]").click();
    await page.locator("[data-porch=status][data-state=connected]").waitFor();
    assert.equal(await page.evaluate(() => typeof window.Porch.open), "function");
  } finally {
    await context.close();
    await host.close();
  }
});
