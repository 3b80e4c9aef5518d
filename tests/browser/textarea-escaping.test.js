// Stored admin text cannot end the <textarea> it is edited in: a greeting of
// `</textarea><meta http-equiv="refresh" …>` once sent every admin who opened the site's
// settings off-site (CSP stops scripts, not a meta refresh). These payloads join the XSS corpus.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, setUpFirstAdmin } from "./harness.js";

const PAYLOADS = [
  '</textarea><meta http-equiv="refresh" content="0;url=https://evil.example">',
  "</TEXTAREA ><img src=x onerror=alert(1)>",
  "<script>alert(2)</script>",
];
let page;
const world = fixture({}, async ({ porch, browser }) => {
  page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(15000);
  // Nothing may leave for another host, and no dialog may open.
  await page.route((url) => !url.href.startsWith(porch.url), (route) => route.abort());
  page.on("dialog", async (d) => { await d.dismiss(); assert.fail(`dialog: ${d.message()}`); });
});

test("a hostile greeting or origin list stays text in the site settings", { timeout: 60000 }, async () => {
  const { porch } = world;
  await setUpFirstAdmin(page, porch);

  for (const payload of PAYLOADS) {
    await page.goto(`${porch.url}/sites/new`);
    await page.locator("#name").fill("Acme");
    await page.locator("#origins").fill("https://acme.example");
    await page.locator("#greeting").fill(payload);
    await page.getByRole("button", { name: "Create site" }).click();
    await page.waitForURL(/\/sites\/s_/);
    await page.reload();
    assert.ok(page.url().startsWith(porch.url), `left Porch for ${page.url()}`);
    assert.equal(await page.locator("#greeting").inputValue(), payload);
    assert.equal(await page.locator("meta[http-equiv], #evil, img[src=x], main script").count(), 0);

    // A refused origin list is shown back in its field.
    await page.goto(`${porch.url}/sites/new`);
    await page.locator("#name").fill("Acme");
    await page.locator("#origins").fill(payload);
    await page.getByRole("button", { name: "Create site" }).click();
    await page.locator("#origins").waitFor();
    assert.equal(await page.locator("#origins").inputValue(), payload);
    assert.equal(await page.locator("meta[http-equiv], img[src=x], main script").count(), 0);
  }
  // Give a meta refresh its chance to fire before checking we are still here.
  await page.waitForLoadState("networkidle");
  assert.ok(page.url().startsWith(porch.url), `left Porch for ${page.url()}`);
});
