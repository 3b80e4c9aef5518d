// Inbox search as an agent uses it: the search box in the inbox header, results with the
// matched words highlighted (hostile visitor text stays text), and a result that lands on its
// message in the conversation, scrolled to and outlined. Messages are indexed in the background
// within 2 s (docs/admin.md#search): the test waits for that, through the page, before typing.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, snap, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
let page;
const world = fixture({ site: "Acme Shop", agent: AGENT }, async ({ browser }) => {
  page = await (await browser.newContext({ viewport: { width: 1280, height: 700 } })).newPage();
  page.setDefaultTimeout(15000);
  page.on("dialog", async (d) => { await d.dismiss(); assert.fail(`dialog: ${d.message()}`); });
});

test("search from the inbox box, open a result, land on the highlighted message",
  { timeout: 90000 }, async () => {
    const { porch, browser, host } = world;
    const v = await visitor(browser, host.url);
    await v.say("Hi there, I have a question");
    for (let i = 0; i < 12; i += 1) await v.say(`Some filler line number ${i} to make the page long`);
    await v.say("My parcel for order 4417 never arrived <script>alert(1)</script>");
    for (let i = 0; i < 12; i += 1) await v.say(`More filler after the question, line ${i}`);

    await signIn(page, porch, AGENT.email);
    await waitFor("the message to be indexed", async () => {
      await page.goto(`${porch.url}/search?q=4417`);
      return /1 message/.test(await page.locator(".inbox-count").innerText());
    }, { timeoutMs: 10000, everyMs: 250 });
    // `/` focuses the search box on the search page too.
    await page.locator("main").click({ position: { x: 1, y: 1 } });
    await page.keyboard.press("/");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "inbox-search");
    await page.goto(`${porch.url}/inbox`);
    const box = page.locator("#inbox-search");
    await box.focus();
    await page.keyboard.type("parcel 4417");
    await Promise.all([page.waitForURL(/\/search\?q=parcel/), page.keyboard.press("Enter")]);

    const results = page.locator("ol.search-hits li");
    assert.equal(await results.count(), 1);
    assert.deepEqual(await results.first().locator("mark").allInnerTexts(), ["parcel", "4417"]);
    assert.match(await results.first().innerText(), /<script>alert\(1\)<\/script>/);
    assert.equal(await page.locator("main script, main img").count(), 0);
    assert.match(await page.locator(".inbox-count").innerText(), /1 message/);
    await snap(page, "search-results");

    // Keyboard: the result is a link; Enter opens it.
    await results.first().locator("a").focus();
    await Promise.all([page.waitForURL(/\/conversations\/\d+#m\d+$/), page.keyboard.press("Enter")]);
    const id = new URL(page.url()).hash.slice(2);
    const target = page.locator(`#message-${id}`);
    assert.match(await target.innerText(), /My parcel for order 4417/);
    assert.equal(await page.evaluate(() => document.querySelector(":target")?.closest("li")?.id),
      `message-${id}`);
    assert.equal(await target.locator(".bubble").evaluate((b) => getComputedStyle(b).outlineStyle), "solid");
    // Only that message is outlined, and it is on screen.
    assert.equal(await page.locator(".message .bubble").evaluateAll(
      (all) => all.filter((b) => getComputedStyle(b).outlineStyle === "solid").length), 1);
    assert.ok(await target.isVisible());
    const box2 = await target.boundingBox();
    assert.ok(box2.y >= 0 && box2.y < 700, `the message is scrolled into view (y=${box2.y})`);
    // As any opened conversation, the focus is in the reply box (a page opened at a fragment
    // gets no autofocus from the browser), and the view stays on the message.
    await page.waitForFunction(() => document.activeElement?.id === "reply-body");
    assert.ok((await target.boundingBox()).y >= 0, "still in view");
    await snap(page, "search-landed");
    await v.context.close();
  });

test("hostile queries show a page, never an error", { timeout: 60000 }, async () => {
  const { porch } = world;
  for (const q of ['"', "NEAR(", "body:*", "-", "^x", "a OR", "'); --"]) {
    const res = await page.goto(`${porch.url}/search?q=${encodeURIComponent(q)}`);
    assert.equal(res.status(), 200, q);
    await page.locator(".inbox-count").waitFor();
  }
});
