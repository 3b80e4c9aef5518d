// The widget's accessibility, second audit (docs/widget.md, "Keyboard and screen readers"): every focus ring
// in the panel reaches 3:1 against what is behind it whatever the site colour, in both schemes; Enter in the
// pre-chat form refuses an empty required field as the send button does, instead of moving on; the
// launcher does not move under prefers-reduced-motion; and once the server says the site is gone, the panel
// offers nothing that can no longer work (the email form, the pre-chat form).
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, hostWithColourQuery, signIn, visitor, waitFor, watch } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
// The host page takes the snippet's colour from its ?color= query (no query: the default colour).
const world = fixture({ site: "Acme Focus", agent: AGENT, email: true }, hostWithColourQuery);

/**
 * Runs `act(page)` as the admin, signed in on a page that is closed afterwards: an open admin page makes the
 * agents online, and the panel then offers no email form.
 */
async function asAdmin(act) {
  const context = await world.browser.newContext();
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    await signIn(page, world.porch, AGENT.email);
    await act(page);
  } finally {
    await context.close();
  }
}

/** Sets the site's pre-chat form on its admin page: each of name and email "off", "optional" or "required". */
const setPrechat = (name, email) => asAdmin(async (admin) => {
  await admin.goto(`${world.porch.url}/sites/${world.site.key}/prechat`);
  await admin.locator(`input[name=name_field][value=${name}]`).check();
  await admin.locator(`input[name=email_field][value=${email}]`).check();
  await admin.locator("input[name=question_field][value=off]").check();
  await admin.getByRole("button", { name: "Save form" }).click();
  await admin.getByText("Pre-chat form saved.").waitFor();
});

/**
 * What the widget's focused element shows: its name (data-porch, else class, else tag), the panel's
 * scheme, and the best WCAG contrast of its focus ring's colours (outline, box shadows; a translucent one
 * laid over what is behind) against the nearest opaque background behind the ring: the element's own for
 * a ring drawn inside it (negative offset), its parent's for one outside.
 */
function focusRing() {
  const root = document.getElementById("porch-chat").shadowRoot;
  const el = root.activeElement;
  if (!el || !root.querySelector("[data-porch=panel]").contains(el)) return null;
  const rgba = (text) => {
    const srgb = text.startsWith("color(srgb");
    const [r, g, b, a = 1] = text.match(/[\d.]+/g).map(Number);
    return srgb ? [r * 255, g * 255, b * 255, a] : [r, g, b, a];
  };
  const lum = (c) => c.slice(0, 3).map((v) => v / 255)
    .map((v) => (v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4))
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const s = getComputedStyle(el);
  let bg = null;
  for (let at = parseFloat(s.outlineOffset) < 0 ? el : el.parentElement; at && !bg;
    at = at.parentElement || at.getRootNode().host) {
    const c = rgba(getComputedStyle(at).backgroundColor);
    if (c[3] === 1) bg = c;
  }
  const colours = (s.boxShadow.match(/(rgba?|color)\([^)]*\)/g) || []).map(rgba);
  if (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0) colours.push(rgba(s.outlineColor));
  const ratios = colours.map((c) => {
    const over = [0, 1, 2].map((i) => c[3] * c[i] + (1 - c[3]) * bg[i]);
    const [x, y] = [lum(over), lum(bg)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  });
  return { name: el.dataset.porch || el.className || el.tagName.toLowerCase(),
    scheme: getComputedStyle(root.querySelector("[data-porch=panel]")).colorScheme, ratio: Math.max(0, ...ratios) };
}

/**
 * Tabs from the launcher through the panel until focus leaves it and returns each stop's focusRing(); on the
 * Your data button, `atDataButton()` runs first (to open its menu, whose items Tab goes to next).
 */
async function tabThrough(page, atDataButton = async () => {}) {
  await page.locator("[data-porch=launcher]").focus();
  const stops = [];
  for (let i = 0; i < 40; i += 1) {
    await page.keyboard.press("Tab");
    const ring = await page.evaluate(focusRing);
    if (!ring) return stops;
    if (ring.name === "data-button") await atDataButton();
    stops.push(ring);
  }
  throw new Error(`focus still in the panel after 40 tabs: ${JSON.stringify(stops)}`);
}

test("every focus ring in the panel reaches 3:1 on dark site colours in dark mode and light ones in light mode",
  { timeout: 120000 }, async () => {
    const { host, browser } = world;
    await setPrechat("required", "off");
    const cases = [["dark", "#111111"], ["dark", "#1a237e"], ["light", "#fafafa"], ["light", "#fef08a"]];
    for (const [colorScheme, color] of cases) {
      const context = await browser.newContext({ colorScheme, viewport: { width: 1000, height: 760 } });
      try {
        const page = await context.newPage();
        page.setDefaultTimeout(15000);
        await page.goto(`${host.url}?color=${encodeURIComponent(color)}`);
        await page.locator("[data-porch=launcher]").focus();
        await page.keyboard.press("Enter");
        await page.locator("[data-porch=status][data-state=connected]").waitFor();
        await page.locator("[data-porch=prechat]").waitFor({ state: "visible" });
        // Before the first message: the pre-chat form's field. After it: a link in the visitor's bubble
        // (on the site colour), the email form (agents are away, mail is on), and the Your data menu.
        const stops = await tabThrough(page);
        await page.locator("[data-porch=prechat-name]").fill("Grace");
        await page.locator("[data-porch=input]").fill("See https://example.org/help");
        await page.locator("[data-porch=input]").press("Enter");
        await page.locator("[data-porch=message][data-author=visitor][data-status=sent]").waitFor();
        await page.locator("[data-porch=email]").waitFor({ state: "visible" });
        stops.push(...await tabThrough(page, () => page.keyboard.press("Enter")));

        assert.ok(stops.every((s) => s.scheme === colorScheme), JSON.stringify(stops));
        const names = new Set(stops.map((s) => s.name));
        for (const name of ["data-button", "close", "download-json", "download-text", "erase", "messages", "a",
          "prechat-name", "email-input", "save", "attach", "input", "send"]) {
          assert.ok(names.has(name), `${name} was not reached by Tab: ${[...names].join(", ")}`);
        }
        const faint = stops.filter((s) => s.ratio < 3).map((s) => `${s.name} ${s.ratio.toFixed(2)}:1`);
        assert.deepEqual(faint, [], `${colorScheme} ${color}: focus rings under 3:1`);
      } finally {
        await context.close();
      }
    }
  });

test("Enter in the pre-chat form refuses an empty required email as the send button does, and moves on once answered",
  { timeout: 90000 }, async () => {
    const { host, browser } = world;
    await setPrechat("optional", "required");
    const v = await visitor(browser, host.url);
    try {
      const { page } = v;
      await page.locator("[data-porch=prechat]").waitFor({ state: "visible" });
      const field = (k) => page.locator(`[data-porch=prechat-${k}]`);
      const box = page.locator("[data-porch=input]");
      const error = page.locator("[data-porch=error]");
      const mine = page.locator("[data-porch=message][data-author=visitor]");
      const focused = () => page.evaluate(() => document.getElementById("porch-chat").shadowRoot.activeElement?.dataset.porch);
      const refused = async (how) => {
        await waitFor(`${how}: focus on the email field`, async () => (await focused()) === "prechat-email");
        assert.equal(await error.innerText(), "Please fill in the required fields.", how);
        assert.equal(await field("email").getAttribute("aria-invalid"), "true", how);
        assert.equal(await page.locator("[data-porch=prechat]").isVisible(), true, how);
        assert.equal(await mine.count(), 0, `${how}: a message went`);
      };

      await field("email").press("Enter");
      await refused("Enter in the empty email field, the message box empty");
      await field("name").fill("Grace");
      await field("name").press("Enter");
      await refused("Enter in the name field, the message box empty");
      await box.fill("Where is my parcel?");
      await field("name").press("Enter");
      await refused("Enter in the name field with a message written");
      await box.fill("");
      await page.locator("[data-porch=send]").click();
      await refused("the send button, the message box empty");

      // Answered: Enter takes the visitor to the message box, with the error and the mark gone, and
      // sends nothing, since there is nothing to send.
      await field("email").fill("grace@example.org");
      await field("email").press("Enter");
      await waitFor("focus in the message box", async () => (await focused()) === "input");
      assert.equal(await error.isVisible(), false);
      assert.equal(await field("email").getAttribute("aria-invalid"), null);
      assert.equal(await mine.count(), 0);
      await v.say("Where is my parcel?");
      assert.equal(await page.locator("[data-porch=prechat]").isVisible(), false);
    } finally {
      await v.context.close();
    }
  });

test("under prefers-reduced-motion the launcher does not move on hover, and it still requests nothing before the click",
  { timeout: 60000 }, async () => {
    const { porch, host, browser } = world;
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(15000);
      const seen = watch(page, porch.url);
      await page.emulateMedia({ reducedMotion: "reduce" });
      await page.goto(host.url);
      const launcher = page.locator("[data-porch=launcher]");
      // The launcher's transitions that animate its transform (named, or as part of `all`), and its transform.
      const motion = () => launcher.evaluate((el) => {
        const s = getComputedStyle(el);
        const times = s.transitionDuration.split(",").map(parseFloat);
        return { moving: s.transitionProperty.split(",").map((p) => p.trim())
          .filter((p, i) => (p === "transform" || p === "all") && times[i % times.length] > 0), transform: s.transform };
      });
      await launcher.hover();
      assert.deepEqual(await motion(), { moving: [], transform: "none" });

      // Without the preference, the lift is there (so the check above is not vacuous).
      await page.emulateMedia({ reducedMotion: "no-preference" });
      await page.mouse.move(0, 0);
      await launcher.hover();
      await waitFor("the launcher lifted", async () => {
        const m = await motion();
        return m.moving.length === 1 && m.transform === "matrix(1, 0, 0, 1, 0, -2)";
      });
      assert.deepEqual({ requests: seen.requests, sockets: seen.sockets }, { requests: [], sockets: [] });
      assert.deepEqual(seen.errors, []);
    } finally {
      await context.close();
    }
  });

// Last: it deletes the site.
test("once the site is deleted the panel offers neither the email form nor the pre-chat form, only Close chat",
  { timeout: 90000 }, async () => {
    const { porch, site, host, browser } = world;
    await setPrechat("required", "off");
    // Ann has written (the form answered), so she is offered the email form; Ben has the form open.
    const ann = await visitor(browser, host.url);
    const ben = await visitor(browser, host.url);
    try {
      await ann.page.locator("[data-porch=prechat-name]").fill("Ann");
      await ann.say("Is this still open?");
      await ann.page.locator("[data-porch=email]").waitFor({ state: "visible" });
      await ben.page.locator("[data-porch=prechat]").waitFor({ state: "visible" });
      await ben.page.locator("[data-porch=prechat-name]").focus();

      await asAdmin(async (admin) => {
        await admin.goto(`${porch.url}/sites/${site.key}/delete`);
        await admin.getByLabel("Type the site's name to confirm").fill("Acme Focus");
        await Promise.all([admin.waitForURL((u) => u.pathname === "/sites"),
          admin.getByRole("button", { name: "Delete site" }).click()]);
      });

      for (const [who, { page }] of [["Ann", ann], ["Ben", ben]]) {
        await page.locator("[data-porch=status][data-state=stopped]").waitFor();
        assert.equal(await page.locator("[data-porch=status]").innerText(), "Chat is unavailable", who);
        assert.equal(await page.locator("[data-porch=error]").innerText(), "This chat is not set up on the server.", who);
        // What is left to use in the panel: its controls that are shown and enabled.
        const usable = await page.evaluate(() => [...document.getElementById("porch-chat").shadowRoot
          .querySelectorAll("[data-porch=panel] :is(input, textarea, button, select)")]
          .filter((el) => !el.disabled && el.getClientRects().length)
          .map((el) => el.dataset.porch || el.className));
        assert.deepEqual(usable, ["close"], `${who} is offered what cannot work`);
        const focus = await page.evaluate(() => document.getElementById("porch-chat").shadowRoot.activeElement?.className);
        if (who === "Ben") assert.equal(focus, "close", "focus from the pre-chat field to Close chat, not the host page");
      }
    } finally {
      await Promise.all([ann.context.close(), ben.context.close()]);
    }
  });
