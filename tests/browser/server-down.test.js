// The Porch server is down: the host page must not notice, and the launcher says so only when clicked.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, watch } from "./harness.js";

// Never started: its port is closed.
const world = fixture({ site: "Acme Down", start: false }, async ({ porch, site }) => {
  assert.ok(site.snippet.includes(JSON.stringify(porch.url).slice(1, -1)),
    `the snippet does not point at ${porch.url}: ${site.snippet.slice(-300)}`);
});

for (const where of ["body", "head"]) {
  test(`with the snippet in the ${where}, the launcher reports the outage and the host page keeps working`,
    { timeout: 60000 }, async () => {
      const { porch, host, browser } = world;
      const context = await browser.newContext();
      const page = await context.newPage();
      page.setDefaultTimeout(15000);
      const seen = watch(page, porch.url);
      await page.goto(`${host.url}?snippet=${where}`);
      await page.waitForLoadState("networkidle");
      assert.equal(await page.evaluate(() => window.hostScriptRan), true);
      assert.deepEqual(seen.requests, []);

      const launcher = page.locator("[data-porch=launcher]");
      const unavailable = page.locator("[data-porch=unavailable]");
      await launcher.click();
      await unavailable.waitFor({ state: "visible" });
      assert.match(await unavailable.innerText(), /unavailable/i);
      assert.equal(await launcher.getAttribute("aria-busy"), null);
      assert.deepEqual(seen.requests, [`${porch.url}/widget/panel.js`]);

      // The host page's own button and script still work.
      await page.locator("#own").click();
      await page.locator("#own").click();
      assert.equal(await page.locator("#count").innerText(), "2");

      // A later click tries again (and fails again, quietly).
      await launcher.click();
      await page.waitForLoadState("networkidle");
      await unavailable.waitFor({ state: "visible" });
      assert.equal(seen.requests.length, 2, JSON.stringify(seen.requests));
      assert.equal(await page.locator("script[src$='/widget/panel.js']").count(), 0, "failed scripts left behind");
      assert.deepEqual(seen.sockets, []);
      assert.deepEqual(seen.errors, [], "uncaught errors in the page");
      await context.close();
    });
}
