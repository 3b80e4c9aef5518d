// An admin deletes the site while a visitor has the chat open: the panel says so at once and stops
// (docs/widget-protocol.md, "Connecting"); a message left waiting in the browser for the deleted
// site is shown as not sent and forgotten, not kept "Sending" for ever.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, visitor, waitFor, watch } from "./harness.js";

const world = fixture({ site: "Gone Shop", agent: { email: "admin@example.org", name: "Ada" } });

test("deleting a site stops its open chat panels and drops what they still had to send",
  { timeout: 90000 }, async () => {
    const { porch, site, host, browser } = world;
    const ann = await visitor(browser, host.url);
    const seen = watch(ann.page, porch.url);
    await ann.say("Is this still open?");

    const adminContext = await browser.newContext();
    const admin = await adminContext.newPage();
    admin.setDefaultTimeout(15000);
    await signIn(admin, porch, "admin@example.org");
    await admin.goto(`${porch.url}/sites/${site.key}/delete`);
    await admin.getByLabel("Type the site's name to confirm").fill("Gone Shop");
    await Promise.all([admin.waitForURL((u) => u.pathname === "/sites"),
      admin.getByRole("button", { name: "Delete site" }).click()]);

    const { page } = ann;
    const status = page.locator("[data-porch=status]");
    await waitFor("the panel to stop", async () => (await status.getAttribute("data-state")) === "stopped");
    assert.equal(await page.locator("[data-porch=error]").innerText(), "This chat is not set up on the server.");
    assert.equal(await page.locator("[data-porch=input]").isDisabled(), true);
    // The message sent before stays as it was: stored, then deleted with the site.
    assert.equal(await page.locator("[data-porch=message][data-author=visitor][data-status=sent]").count(), 1);

    // A message this browser still had to send for the site (written while offline, say) is shown
    // as not sent on the next page and no longer kept.
    const pendingKey = `porch:${site.key}:pending`;
    await page.evaluate((k) => localStorage.setItem(k, JSON.stringify([{ client_id: "c-left", body: "Left behind" }])),
      pendingKey);
    await page.reload();
    const left = page.locator("[data-porch=message][data-author=visitor]", { hasText: "Left behind" });
    await waitFor("the waiting message to be marked", async () =>
      (await left.getAttribute("data-status")) === "failed");
    assert.match(await left.innerText(), /Not sent/);
    assert.equal(await page.evaluate((k) => localStorage.getItem(k), pendingKey), null);
    assert.deepEqual(seen.errors, [], "uncaught errors in the page");
    await adminContext.close();
    await ann.context.close();
  });
