// The widget's accessibility (docs/widget.md, "Keyboard and screen readers"): what an audit with axe-core, a
// keyboard and a screen reader's view found, checked where a browser can observe it. Focus stays in the
// full-screen panel on a phone; a reply behind the closed panel renames the launcher and is announced; focus
// never falls to the host page when a form or the erase question replaces what had it; the danger button
// contrasts in both schemes; errors are tied to every field at fault; the message log and the counter do not
// re-announce; the status line speaks states, not countdown ticks; messages take their own direction; Tab
// goes from the Your data button into its menu, and Escape closes the menu before the panel; the message box's focus survives forced colours and its edge contrasts;
// the panel adds no banner landmark.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
const world = fixture({ site: "Acme A11y", agent: AGENT, email: true });

/** What has focus inside the widget: the focused element's data-porch (or tag), and whether it is in the panel. */
const focused = (page) => page.evaluate(() => {
  const root = document.getElementById("porch-chat").shadowRoot;
  const el = root.activeElement;
  return { porch: el ? el.dataset.porch || el.tagName.toLowerCase() : null,
    inPanel: !!el && root.querySelector("[data-porch=panel]").contains(el) };
});

/** A fresh visitor in a context of their own (a phone's viewport, a colour scheme), with the panel open. */
async function open(browser, url, options) {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  await page.goto(url);
  await page.locator("[data-porch=launcher]").click();
  await page.locator("[data-porch=status][data-state=connected]").waitFor();
  return { page, context };
}

/** The id of the conversation holding a message with `body`, through the API. */
async function conversationOf(porch, body) {
  return waitFor("the conversation in the API", async () => {
    const { body: list } = await porch.api("GET", "/conversations");
    for (const c of list.conversations) {
      const { body: messages } = await porch.api("GET", `/conversations/${c.id}/messages`);
      if (messages.messages.some((m) => m.body === body)) return c.id;
    }
    return null;
  });
}

test("on a narrow or short screen the full-screen panel is modal and keeps Tab inside; larger it is not",
  { timeout: 60000 }, async () => {
    const { host, browser } = world;
    const { page, context } = await open(browser, host.url, { viewport: { width: 390, height: 844 } });
    try {
      const panel = page.locator("[data-porch=panel]");
      assert.equal(await panel.getAttribute("aria-modal"), "true");
      await page.locator("[data-porch=send]").focus();
      await page.keyboard.press("Tab");
      assert.deepEqual(await focused(page), { porch: "data-button", inPanel: true }, "Tab from Send wraps to the first");
      await page.keyboard.press("Shift+Tab");
      assert.deepEqual(await focused(page), { porch: "send", inPanel: true }, "Shift+Tab from the first wraps to Send");

      // Wider, the panel sits beside the page: not modal, and Tab leaves it.
      await page.setViewportSize({ width: 1000, height: 760 });
      await waitFor("aria-modal gone", async () => (await panel.getAttribute("aria-modal")) === null);
      await page.locator("[data-porch=send]").focus();
      await page.keyboard.press("Tab");
      assert.equal((await focused(page)).inPanel, false, "Tab from Send stays in the desktop panel");
      // A phone held sideways is wide but short: from the desktop size, only the height makes it
      // full-screen again, and modal.
      await page.setViewportSize({ width: 844, height: 390 });
      await waitFor("aria-modal held sideways", async () => (await panel.getAttribute("aria-modal")) === "true");
      await page.locator("[data-porch=send]").focus();
      await page.keyboard.press("Tab");
      assert.deepEqual(await focused(page), { porch: "data-button", inPanel: true }, "Tab wraps when held sideways");
      await page.setViewportSize({ width: 1000, height: 760 });
      await waitFor("aria-modal gone again", async () => (await panel.getAttribute("aria-modal")) === null);
      await page.setViewportSize({ width: 390, height: 844 });
      await waitFor("aria-modal back", async () => (await panel.getAttribute("aria-modal")) === "true");
      // The page behind a modal panel does not scroll under a wheel over the panel's header.
      await page.evaluate(() => { document.body.style.minHeight = "4000px"; scrollTo(0, 0); });
      const head = await page.locator("#porch-title").boundingBox();
      await page.mouse.move(head.x + 5, head.y + 5);
      await page.mouse.wheel(0, 600);
      // A wheel over the message log scrolls the log alone: once it has been handled, so would the page have.
      const log = await page.locator("[data-porch=messages]").boundingBox();
      await page.mouse.move(log.x + 20, log.y + 20);
      await page.mouse.wheel(0, 600);
      await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
      assert.equal(await page.evaluate(() => scrollY), 0, "the page behind the panel scrolled");
    } finally {
      await context.close();
    }
  });

test("a reply while the panel is closed renames the launcher and is announced; opening resets both",
  { timeout: 60000 }, async () => {
    const { porch, host, browser } = world;
    const v = await visitor(browser, host.url);
    try {
      const { page } = v;
      await v.say("Unread test 5521");
      const id = await conversationOf(porch, "Unread test 5521");
      await page.locator("[data-porch=input]").focus();
      await page.keyboard.press("Escape");
      await page.locator("[data-porch=panel]").waitFor({ state: "hidden" });
      const launcher = page.locator("[data-porch=launcher]");
      assert.equal(await launcher.getAttribute("aria-label"), "Chat with us");

      assert.equal((await porch.api("POST", `/conversations/${id}/messages`, { body: "We are here." })).status, 201);
      await waitFor("the launcher's new name", async () =>
        (await launcher.getAttribute("aria-label")) === "Chat with us (new reply)");
      const announcer = page.locator("[data-porch=announce]");
      await waitFor("the announcement", async () => (await announcer.textContent()) === "New reply from Ana.");
      // A polite region that is in the accessibility tree while the panel is closed: not inside it.
      assert.deepEqual(await announcer.evaluate((el) => ({ role: el.getAttribute("role"),
        hidden: !!el.closest("[hidden], [aria-hidden=true]") })), { role: "status", hidden: false });

      // Its first lines show above the launcher, as text (a visitor saw only a small dot before),
      // kept from screen readers and Tab, which have the announcement and the launcher's name.
      const peek = page.locator("[data-porch=peek]");
      await peek.waitFor({ state: "visible" });
      assert.equal(await peek.textContent(), "Ana: We are here.");
      assert.deepEqual(await peek.evaluate((el) => [el.getAttribute("aria-hidden"), el.tabIndex]), ["true", -1]);
      const [peekBox, launcherBox] = [await peek.boundingBox(), await launcher.boundingBox()];
      assert.ok(peekBox.y + peekBox.height <= launcherBox.y, "above the launcher, not over it");
      // A reply of several lines: its first three, as written, and nothing of the fourth shows (its
      // top showed under the "…", in the card's padding, which overflow does not clip).
      const lines = "Line one\nline two\nline three\nline four must not show\nline five";
      assert.equal((await porch.api("POST", `/conversations/${id}/messages`, { body: lines })).status, 201);
      await waitFor("the newer reply", async () => (await peek.textContent()).includes("line five"));
      const shown = await peek.evaluate((el) => {
        const style = getComputedStyle(el);
        return { lineHeight: parseFloat(style.lineHeight), inner: el.clientHeight, more: el.scrollHeight > el.clientHeight,
          text: el.innerText, padding: style.paddingBottom };
      });
      assert.equal(shown.padding, "0px");
      assert.ok(Math.abs(shown.inner - 3 * shown.lineHeight) < 1.5, `3 lines of ${shown.lineHeight} px in ${shown.inner} px`);
      assert.equal(shown.more, true, "the rest is cut");
      assert.match(shown.text, /^Ana: Line one\nline two\n/, "the reply's own line breaks");

      await peek.click();
      await page.locator("[data-porch=panel]").waitFor({ state: "visible" });
      assert.equal(await peek.isVisible(), false);
      assert.equal(await launcher.getAttribute("aria-label"), "Chat with us");
      assert.equal(await launcher.getAttribute("data-unread"), null);
      assert.equal(await announcer.textContent(), "");

      // Read, closed, then the next page of the tab: the panel loads closed with the history, and the reply
      // the visitor read does not mark the launcher again (it did on every page until 2026-12-07).
      await page.keyboard.press("Escape");
      await page.locator("[data-porch=panel]").waitFor({ state: "hidden" });
      const reply = (text) => page.locator("[data-porch=message][data-author=agent]").filter({ hasText: text });
      await page.reload();
      await reply("We are here.").waitFor({ state: "attached" });
      await page.locator("[data-porch=status][data-state=connected]").waitFor({ state: "attached" });
      assert.equal(await launcher.getAttribute("data-unread"), null);
      assert.equal(await launcher.getAttribute("aria-label"), "Chat with us");
      // A reply not read yet still marks it on the next page, from the history.
      assert.equal((await porch.api("POST", `/conversations/${id}/messages`, { body: "Anything else?" })).status, 201);
      await waitFor("the dot", async () => (await launcher.getAttribute("data-unread")) !== null);
      await page.reload();
      await reply("Anything else?").waitFor({ state: "attached" });
      await waitFor("the dot after the reload", async () => (await launcher.getAttribute("data-unread")) !== null);
      assert.equal(await launcher.getAttribute("aria-label"), "Chat with us (new reply)");
    } finally {
      await v.context.close();
    }
  });

test("the email form's error marks the field, and the mark goes once the address is fixed",
  { timeout: 60000 }, async () => {
    const { host, browser } = world;
    const v = await visitor(browser, host.url);
    try {
      const { page } = v;
      await v.say("Email error test");
      await page.locator("[data-porch=email]").waitFor({ state: "visible" });
      const field = page.locator("[data-porch=email-input]");
      assert.equal(await field.getAttribute("aria-invalid"), null);
      await field.fill("not-an-address");
      await field.press("Enter");
      await page.locator("[data-porch=error]", { hasText: "Please check the email address." }).waitFor();
      assert.equal(await field.getAttribute("aria-invalid"), "true");
      assert.equal(await field.getAttribute("aria-describedby"), "porch-error");
      await field.fill("alice@example.org");
      assert.equal(await field.getAttribute("aria-invalid"), null, "still marked once fixed");
      assert.equal(await field.getAttribute("aria-describedby"), null);
    } finally {
      await v.context.close();
    }
  });

test("once the email address is saved, focus moves to the confirmation, a status, not to the page",
  { timeout: 60000 }, async () => {
    const { host, browser } = world;
    const v = await visitor(browser, host.url);
    try {
      const { page } = v;
      await v.say("Email focus test");
      await page.locator("[data-porch=email]").waitFor({ state: "visible" });
      await page.locator("[data-porch=email-input]").fill("bob@example.org");
      await page.locator("[data-porch=email-input]").press("Enter");
      const saved = page.locator("[data-porch=email-saved]");
      await saved.waitFor();
      await waitFor("focus on the confirmation", async () => (await focused(page)).porch === "email-saved");
      assert.equal(await saved.getAttribute("role"), "status");
      assert.equal(await saved.getAttribute("tabindex"), "-1");
      assert.equal(await page.evaluate(() => document.activeElement?.id), "porch-chat", "focus fell to the page");
    } finally {
      await v.context.close();
    }
  });

test("Delete my data: the question is an alertdialog with focus on Cancel; Cancel returns to the button, Delete to the message box",
  { timeout: 60000 }, async () => {
    const { host, browser } = world;
    const v = await visitor(browser, host.url);
    try {
      const { page } = v;
      await v.say("Erase focus test");
      const dataButton = page.locator("[data-porch=data-button]");
      await dataButton.click();
      await page.locator("[data-porch=erase]").click();
      assert.equal((await focused(page)).porch, "erase-cancel", "focus on Cancel");
      const ask = await page.locator("[data-porch=erase-ask]").evaluate((el) => ({
        role: el.getAttribute("role"), name: el.getAttribute("aria-label"),
        description: el.getRootNode().getElementById(el.getAttribute("aria-describedby"))?.textContent }));
      assert.deepEqual(ask, { role: "alertdialog", name: "Delete my data",
        description: "Delete all your messages and details from this chat? This cannot be undone." });

      await page.keyboard.press("Enter"); // Cancel
      await page.locator("[data-porch=data-menu]").waitFor({ state: "hidden" });
      assert.equal((await focused(page)).porch, "data-button", "focus back on the button after Cancel");
      assert.equal(await dataButton.getAttribute("aria-expanded"), "false");

      await dataButton.click();
      await page.locator("[data-porch=erase]").click();
      await page.locator("[data-porch=erase-confirm]").click();
      await page.locator("[data-porch=error]", { hasText: "Your data was deleted." }).waitFor();
      assert.equal((await focused(page)).porch, "input", "focus in the message box after Delete");
    } finally {
      await v.context.close();
    }
  });

test("Escape closes the Your data menu first, then the panel; a closed panel reopens without the menu",
  { timeout: 60000 }, async () => {
    const { host, browser } = world;
    const v = await visitor(browser, host.url);
    try {
      const { page } = v;
      const dataButton = page.locator("[data-porch=data-button]");
      const menu = page.locator("[data-porch=data-menu]");
      const panel = page.locator("[data-porch=panel]");
      await dataButton.focus();
      await page.keyboard.press("Enter");
      await menu.waitFor({ state: "visible" });
      // Tab goes from the button into its menu (not to Close chat, which comes between them in the page),
      // and Shift+Tab from the first item back to the button.
      await page.keyboard.press("Tab");
      assert.equal((await focused(page)).porch, "download-json");
      await page.keyboard.press("Shift+Tab");
      assert.equal((await focused(page)).porch, "data-button");
      await page.keyboard.press("Tab");
      await page.keyboard.press("Tab");
      assert.equal((await focused(page)).porch, "download-text");
      await page.keyboard.press("Shift+Tab");
      assert.equal((await focused(page)).porch, "download-json");
      await page.keyboard.press("Escape");
      await menu.waitFor({ state: "hidden" });
      assert.equal(await panel.isVisible(), true, "the first Escape closed the panel");
      assert.equal(await dataButton.getAttribute("aria-expanded"), "false");
      assert.equal((await focused(page)).porch, "data-button");
      await page.keyboard.press("Escape");
      await panel.waitFor({ state: "hidden" });
      assert.equal((await focused(page)).porch, "launcher");

      // Closed with the close button while the menu is open: reopened, the menu is shut.
      await page.keyboard.press("Enter");
      await panel.waitFor({ state: "visible" });
      await dataButton.click();
      await menu.waitFor({ state: "visible" });
      await page.locator("[data-porch=panel] button.close").click();
      await panel.waitFor({ state: "hidden" });
      await page.locator("[data-porch=launcher]").click();
      await panel.waitFor({ state: "visible" });
      assert.equal(await menu.isVisible(), false, "the menu was still open");
      assert.equal(await dataButton.getAttribute("aria-expanded"), "false");

      // Escape on the button itself closes the panel it opened.
      await page.locator("[data-porch=launcher]").focus();
      await page.keyboard.press("Escape");
      await panel.waitFor({ state: "hidden" });
      assert.equal((await focused(page)).porch, "launcher");
    } finally {
      await v.context.close();
    }
  });

test("the Delete my data buttons contrast at least 4.5:1 in the light and in the dark scheme", { timeout: 60000 },
  async () => {
    const { host, browser } = world;
    for (const colorScheme of ["light", "dark"]) {
      const { page, context } = await open(browser, host.url, { colorScheme });
      try {
        await page.locator("[data-porch=data-button]").click();
        const ratio = (el) => {
          const rgba = (s) => s.match(/[\d.]+/g).map(Number);
          const lum = ([r, g, b]) => [r, g, b].map((v) => v / 255)
            .map((v) => (v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4))
            .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
          // The first opaque background behind the text (the button's own is transparent).
          let bg = null;
          for (let at = el; at && !bg; at = at.parentElement) {
            const c = rgba(getComputedStyle(at).backgroundColor);
            if ((c[3] ?? 1) === 1) bg = c;
          }
          const [a, b] = [lum(rgba(getComputedStyle(el).color)), lum(bg)].sort((x, y) => y - x);
          return (a + 0.05) / (b + 0.05);
        };
        const erase = await page.locator("[data-porch=erase]").evaluate(ratio);
        assert.ok(erase >= 4.5, `${colorScheme}: Delete my data at ${erase.toFixed(2)}:1`);
        await page.locator("[data-porch=erase]").click();
        const confirm = await page.locator("[data-porch=erase-confirm]").evaluate(ratio);
        assert.ok(confirm >= 4.5, `${colorScheme}: Delete at ${confirm.toFixed(2)}:1`);
      } finally {
        await context.close();
      }
    }
  });

test("a message enters the log once: no re-insertion on its ack, and what changes in it is hidden from screen readers",
  { timeout: 60000 }, async () => {
    const { host, browser } = world;
    const v = await visitor(browser, host.url);
    try {
      const { page } = v;
      const log = page.locator("[data-porch=messages]");
      assert.equal(await log.getAttribute("role"), "log");
      assert.equal(await log.getAttribute("aria-relevant"), "additions");
      // Records what a live region would read again: a message removed (to be re-inserted), or a node added
      // inside a message already shown, outside an aria-hidden part.
      await log.evaluate((list) => {
        window.__again = [];
        new MutationObserver((records) => {
          for (const r of records) {
            for (const n of r.removedNodes) if (n.dataset?.porch === "message") window.__again.push(`removed: ${n.textContent}`);
            if (r.target === list || !r.addedNodes.length) continue;
            const at = r.target.nodeType === 1 ? r.target : r.target.parentElement;
            if (!at.closest("[aria-hidden=true]")) window.__again.push(`added in: ${r.target.textContent}`);
          }
        }).observe(list, { childList: true, subtree: true, characterData: true });
      });
      await v.say("First of two");
      await v.say("Second of two");
      assert.deepEqual(await page.evaluate(() => window.__again), []);
      const meta = page.locator("[data-porch=message][data-author=visitor] .meta").last();
      assert.match(await meta.textContent(), /^\d{1,2}:\d{2}(\s?[AP]M)? \u00b7 Sent$/);
      assert.equal(await meta.locator(".state").getAttribute("aria-hidden"), "true");
    } finally {
      await v.context.close();
    }
  });

// A reload (or the next page, the panel reopening) shows the greeting and history again: they fill the
// log before it is live, so they are not read out again; a reconnect's welcome keeps the greeting in place.
test("the log turns live only once filled, and a reconnect re-inserts nothing", { timeout: 60000 }, async () => {
  const { host, browser } = world;
  const context = await browser.newContext();
  // Every change of the log, in order, from the moment the launcher makes its shadow root.
  await context.addInitScript(() => {
    window.__log = [];
    const attach = Element.prototype.attachShadow;
    Element.prototype.attachShadow = function (init) {
      const root = attach.call(this, init);
      new MutationObserver((records) => {
        for (const r of records) {
          const at = r.target.nodeType === 1 ? r.target : r.target.parentElement;
          const list = at.closest("[data-porch=messages]");
          if (!list) continue;
          if (r.type === "attributes") window.__log.push(`live: ${list.getAttribute("aria-live")}`);
          for (const n of r.addedNodes) window.__log.push(`added: ${n.textContent}`);
          for (const n of r.removedNodes) window.__log.push(`removed: ${n.textContent}`);
        }
      }).observe(root, { childList: true, subtree: true, attributes: true, attributeFilter: ["aria-live"] });
      return root;
    };
  });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  try {
    await page.goto(host.url);
    await page.locator("[data-porch=launcher]").click();
    await page.locator("[data-porch=status][data-state=connected]").waitFor();
    await page.locator("[data-porch=input]").fill("Shown again after a reload");
    await page.locator("[data-porch=input]").press("Enter");
    await page.locator("[data-porch=message][data-status=sent]").waitFor();

    await page.reload();
    await page.locator("[data-porch=message][data-status=sent]").waitFor();
    const log = await page.evaluate(() => window.__log);
    const live = log.indexOf("live: polite");
    assert.ok(live > 0, JSON.stringify(log));
    assert.ok(log.slice(0, live).some((e) => e.includes("Shown again after a reload")), JSON.stringify(log));
    assert.deepEqual(log.slice(live).filter((e) => !e.startsWith("live:")), []);

    await context.setOffline(true);
    await waitFor("the panel to see the network gone", async () =>
      (await page.locator("[data-porch=status]").getAttribute("data-state")) !== "connected");
    await context.setOffline(false);
    await page.locator("[data-porch=status][data-state=connected]").waitFor();
    const after = await page.evaluate(() => window.__log);
    assert.deepEqual(after.slice(live).filter((e) => !e.startsWith("live:")), [], "a reconnect re-inserted");
  } finally {
    await context.close();
  }
});

test("the character counter is tied to the box and speaks only at 200 left, 50 left and the limit",
  { timeout: 60000 }, async () => {
    const { host, browser } = world;
    const v = await visitor(browser, host.url);
    try {
      const { page } = v;
      const input = page.locator("[data-porch=input]");
      const counter = page.locator("[data-porch=panel] .counter");
      const announcer = page.locator("[data-porch=announce]");
      await announcer.evaluate((el) => {
        window.__said = [];
        new MutationObserver(() => { if (el.textContent) window.__said.push(el.textContent); })
          .observe(el, { childList: true, characterData: true, subtree: true });
      });
      await input.fill("x".repeat(3790));
      await counter.waitFor({ state: "visible" });
      assert.equal(await input.getAttribute("aria-describedby"), "porch-counter");
      assert.equal(await counter.getAttribute("id"), "porch-counter");
      assert.equal(await counter.evaluate((el) => !!el.closest("[aria-live], [role=status], [role=log], [role=alert]")),
        false, "the counter is a live region");
      await input.fill("x".repeat(3801));
      await waitFor("199 left", async () => (await page.evaluate(() => window.__said)).length === 1);
      for (let i = 0; i < 3; i++) await input.press("x");
      await input.fill("x".repeat(3960));
      await waitFor("40 left", async () => (await page.evaluate(() => window.__said)).length === 2);
      await input.press("x");
      await input.fill("x".repeat(4001));
      await waitFor("the limit", async () => (await page.evaluate(() => window.__said)).length >= 3);
      await page.waitForTimeout(300); // and nothing more
      assert.deepEqual(await page.evaluate(() => window.__said),
        ["199 characters left.", "40 characters left.", "Messages can be at most 4000 characters."]);
      await input.fill("short");
      assert.equal(await counter.isVisible(), false);
      assert.equal(await input.getAttribute("aria-describedby"), null);
    } finally {
      await v.context.close();
    }
  });

test("the character counter covers nothing of the panel, at 1000 px and at 360 px", { timeout: 60000 },
  async () => {
    const { host, browser } = world;
    const v = await visitor(browser, host.url);
    try {
      const { page } = v;
      for (const text of ["One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight"]) await v.say(text);
      for (const width of [1000, 360]) {
        await page.setViewportSize({ width, height: 740 });
        await page.locator("[data-porch=input]").fill("x".repeat(3600));
        const counter = page.locator("[data-porch=panel] .counter");
        await counter.waitFor({ state: "visible" });
        // Every part of the panel outside the message box's own row (the thread, the email offer,
        // the header) with the rows its box covers; the counter may cover none of them.
        const covered = await page.locator("[data-porch=panel]").evaluate((panel) => {
          const c = panel.querySelector(".counter").getBoundingClientRect();
          return [...panel.children].filter((part) => !part.contains(panel.querySelector(".counter")))
            .map((part) => [part.className || part.tagName, part.getBoundingClientRect()])
            .filter(([, r]) => r.height > 0 && r.top < c.bottom && c.top < r.bottom
              && r.left < c.right && c.left < r.right)
            .map(([name]) => name);
        });
        assert.deepEqual(covered, [], `at ${width} px the counter covers ${covered}`);
        await page.locator("[data-porch=input]").fill("");
      }
    } finally {
      await v.context.close();
    }
  });

test("each message takes its own direction: Arabic in an English panel, English in an Arabic one",
  { timeout: 60000 }, async () => {
    const { porch, host, browser } = world;
    const direction = (bubble) => bubble.evaluate((el) => [el.getAttribute("dir"), getComputedStyle(el).direction]);
    const en = await visitor(browser, host.url);
    const ar = await visitor(browser, host.url, { locale: "ar" });
    try {
      // The box lays the text out in its own direction while it is typed, too.
      const box = en.page.locator("[data-porch=input]");
      await box.fill("\u0645\u0631\u062d\u0628\u0627");
      assert.deepEqual(await box.evaluate((el) => [el.getAttribute("dir"), getComputedStyle(el).direction]), ["auto", "rtl"]);
      await box.fill("");
      await en.say("\u0645\u0631\u062d\u0628\u0627\u060c \u0647\u0644 \u0645\u0646 \u0623\u062d\u062f\u061f");
      assert.deepEqual(await direction(en.page.locator("[data-porch=message][data-author=visitor] .bubble")),
        ["auto", "rtl"]);

      assert.equal(await ar.page.locator("[data-porch=panel]").getAttribute("dir"), "rtl");
      // What is announced is in the panel's language and direction too, outside the panel as it is.
      assert.deepEqual(await ar.page.locator("[data-porch=announce]").evaluate((el) => [el.lang, el.dir]),
        ["ar", "rtl"]);
      assert.deepEqual(await en.page.locator("[data-porch=announce]").evaluate((el) => [el.lang, el.dir]),
        ["en", "ltr"]);
      // The default label and the "unavailable" note are English, said so whatever the page's language.
      assert.deepEqual(await ar.page.locator("[data-porch=launcher], [data-porch=unavailable]")
        .evaluateAll((els) => els.map((el) => el.getAttribute("lang"))), ["en", "en"]);
      await ar.say("Hello, order 42 please");
      assert.deepEqual(await direction(ar.page.locator("[data-porch=message][data-author=visitor] .bubble")),
        ["auto", "ltr"]);
      const id = await conversationOf(porch, "Hello, order 42 please");
      assert.equal((await porch.api("POST", `/conversations/${id}/messages`, { body: "Sure, one moment." })).status, 201);
      const theirs = ar.page.locator("[data-porch=message][data-author=agent] .bubble");
      await theirs.waitFor();
      assert.deepEqual(await direction(theirs), ["auto", "ltr"]);
    } finally {
      await Promise.all([en.context.close(), ar.context.close()]);
    }
  });

test("the pre-chat form marks every field at fault, unmarks each once fixed, and Enter in a field sends",
  { timeout: 90000 }, async () => {
    const { porch, host, browser, site } = world;
    const adminContext = await browser.newContext();
    const context = await browser.newContext();
    try {
      const admin = await adminContext.newPage();
      admin.setDefaultTimeout(15000);
      await signIn(admin, porch, AGENT.email);
      await admin.goto(`${porch.url}/sites/${site.key}/prechat`);
      await admin.locator("input[name=name_field][value=required]").check();
      await admin.locator("input[name=email_field][value=optional]").check();
      await admin.getByLabel("Question text", { exact: true }).fill("Order number?");
      await admin.locator("input[name=question_field][value=required]").check();
      await admin.getByRole("button", { name: "Save form" }).click();
      await admin.getByText("Pre-chat form saved.").waitFor();

      const page = await context.newPage();
      page.setDefaultTimeout(15000);
      await page.goto(host.url);
      await page.locator("[data-porch=launcher]").click();
      await page.locator("[data-porch=prechat]").waitFor({ state: "visible" });
      const field = (k) => page.locator(`[data-porch=prechat-${k}]`);
      const marks = async () => Object.fromEntries(await Promise.all(["name", "email", "answer"].map(async (k) =>
        [k, [await field(k).getAttribute("aria-invalid"), await field(k).getAttribute("aria-describedby")]])));

      await field("email").fill("grace@");
      await page.locator("[data-porch=input]").fill("Where is my parcel?");
      await page.locator("[data-porch=input]").press("Enter");
      await page.locator("[data-porch=error]").waitFor({ state: "visible" });
      const bad = ["true", "porch-error"];
      assert.deepEqual(await marks(), { name: bad, email: bad, answer: bad });
      assert.equal(await page.locator("[data-porch=error]").innerText(),
        "Please fill in the required fields. Please check the email address.");
      assert.equal((await focused(page)).porch, "prechat-name", "focus on the first field at fault");

      await field("name").fill("Grace");
      await field("email").fill("grace@example.org");
      assert.deepEqual(await marks(), { name: [null, null], email: [null, null], answer: bad });
      await field("answer").fill("PX-1");
      await field("answer").press("Enter");
      await page.locator("[data-porch=message][data-author=visitor][data-status=sent]").waitFor();
      assert.equal(await page.locator("[data-porch=prechat]").isVisible(), false);
      assert.equal((await focused(page)).porch, "input", "focus in the message box once the form is gone");
    } finally {
      await Promise.all([context.close(), adminContext.close()]);
    }
  });

// Last: it stops the server for a while.
test("the status line is a status region that speaks the reconnect state once, not each second of its countdown",
  { timeout: 90000 }, async () => {
    const { porch, host, browser } = world;
    const v = await visitor(browser, host.url);
    const status = v.page.locator("[data-porch=status]");
    try {
      assert.equal(await status.getAttribute("role"), "status");
      await porch.stop();
      // What a screen reader gets (the text outside aria-hidden parts) next to what is shown, sampled.
      const sample = () => status.evaluate((el) => {
        const spoken = (n) => [...n.childNodes].map((c) => (c.nodeType === 3 ? c.data
          : c.getAttribute("aria-hidden") === "true" ? "" : spoken(c))).join("");
        return { state: el.dataset.state, shown: el.innerText, spoken: spoken(el) };
      });
      const seen = [];
      await waitFor("two different countdowns", async () => {
        const s = await sample();
        if (s.state !== "connected") seen.push(s);
        return new Set(seen.filter((x) => x.state === "waiting").map((x) => x.shown)).size >= 2;
      }, { timeoutMs: 30000, everyMs: 100 });
      assert.ok(seen.every((s) => s.state !== "waiting" || /Reconnecting in \d+ s/.test(s.shown)), JSON.stringify(seen));
      assert.deepEqual([...new Set(seen.map((s) => s.spoken))], ["Reconnecting\u2026"]);
      assert.equal(await status.ariaSnapshot(), "- status: Reconnecting\u2026");
    } finally {
      await porch.start();
    }
    try {
      await v.page.locator("[data-porch=status][data-state=connected]").waitFor({ timeout: 45000 });
      assert.equal(await status.ariaSnapshot(), "- status: Connected");
    } finally {
      await v.context.close();
    }
  });

test("the message box keeps a visible focus in forced colours, its edge contrasts, and the panel adds no banner",
  { timeout: 60000 }, async () => {
    const { host, browser } = world;
    for (const forcedColors of ["none", "active"]) {
      const { page, context } = await open(browser, host.url, { forcedColors, colorScheme: "light" });
      try {
        await page.locator("[data-porch=input]").focus();
        const seen = await page.evaluate(() => {
          const root = document.getElementById("porch-chat").shadowRoot;
          const input = root.querySelector("[data-porch=input]");
          const s = getComputedStyle(input);
          const lum = (c) => {
            const [r, g, b] = c.match(/\d+/g).slice(0, 3).map(Number).map((v) => {
              v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
            });
            return 0.2126 * r + 0.7152 * g + 0.0722 * b;
          };
          const panelBg = getComputedStyle(root.querySelector("[data-porch=panel]")).backgroundColor;
          const [a, b] = [lum(s.borderTopColor), lum(panelBg)].sort((x, y) => y - x);
          return { outline: s.outlineStyle, edge: (a + 0.05) / (b + 0.05),
            banners: root.querySelectorAll("header, [role=banner]").length };
        });
        // Forced colours drop the box shadow the normal scheme draws focus with; the outline stays.
        assert.equal(seen.outline, "solid", `${forcedColors}: ${JSON.stringify(seen)}`);
        assert.equal(seen.banners, 0, "a second banner landmark on the host page");
        if (forcedColors === "none") assert.ok(seen.edge >= 3, `the box's edge is ${seen.edge.toFixed(2)}:1`);
      } finally {
        await context.close();
      }
    }
  });
