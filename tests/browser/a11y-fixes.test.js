// What an accessibility audit found, as a keyboard or screen-reader user meets it: the focus finds
// the sentence saying the inbox is empty (by the skip link, or after e closed the last row); status
// regions (Reconnecting…, Visitor is typing…) are in the page from the start and only their text
// changes; a refused reply marks the box invalid, described by the reason, until it is edited; and
// the recovery codes page starts with the focus on the news that two-factor sign-in is on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { fixture, signIn, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
let page;
const world = fixture({ site: "Acme Shop", agent: AGENT }, async ({ porch, browser }) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, AGENT.email);
});

const focused = () => page.evaluate(() => {
  const el = document.activeElement;
  return { tag: el?.tagName, text: el?.textContent?.trim().slice(0, 80) ?? "" };
});

/** How an element stands for a screen reader and on screen: not removed, its text, its height. */
const region = (locator) => locator.evaluate((el) => ({
  hidden: el.hidden,
  display: getComputedStyle(el).display,
  role: el.getAttribute("role"),
  text: el.textContent,
  height: el.getBoundingClientRect().height,
}));

/** Waits until `locator`'s text is `text`. */
const textIs = (locator, text) =>
  waitFor(`the text "${text}"`, async () => (await locator.textContent()) === text, { timeoutMs: 10000 });

test("on an empty inbox the skip link leads to the sentence saying so", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/inbox?filter=mine&status=open`);
  await page.keyboard.press("Tab");
  assert.equal((await focused()).text, "Skip to conversations");
  await page.keyboard.press("Enter");
  assert.deepEqual(await focused(), { tag: "P", text: "Nothing assigned to you right now." });
  assert.equal(await page.locator("[data-empty]").isVisible(), true);
  // The empty list still draws no empty box.
  assert.equal(await page.locator("#conversations").evaluate((el) => el.getBoundingClientRect().height), 0);
});

test("e on the last row puts the focus on the sentence saying the list is empty; z brings the row back",
  { timeout: 60000 }, async () => {
    const v = await visitor(world.browser, world.host.url);
    await v.say("The only chat");
    await page.goto(`${world.porch.url}/inbox`);
    const row = page.locator("#conversations > li", { hasText: "The only chat" });
    await row.waitFor();
    assert.equal(await page.locator("#conversations > li").count(), 1);
    await page.keyboard.press("j");
    assert.match((await focused()).text, /The only chat/);

    await page.keyboard.press("e");
    await row.waitFor({ state: "detached" });
    await page.waitForFunction(() => document.activeElement?.matches("[data-empty]"), null, { timeout: 5000 });
    assert.equal((await focused()).text, "No open conversations. New chats appear here as they arrive.");
    assert.equal(await page.locator("[data-empty]").isVisible(), true);
    assert.equal(await page.locator("#conversations").evaluate((el) => el.getBoundingClientRect().height), 0);

    // Undo from there: the reopened row comes back and takes the focus.
    await page.keyboard.press("z");
    await row.waitFor();
    await page.waitForFunction(() => document.activeElement?.closest("#conversations > li"));
    assert.match((await focused()).text, /The only chat/);
    assert.equal(await page.locator("[data-empty]").isHidden(), true);

    // Closed again, then a new chat arrives: the list takes the focus, not the page's body.
    await page.keyboard.press("e");
    await page.waitForFunction(() => document.activeElement?.matches("[data-empty]"), null, { timeout: 5000 });
    const next = await visitor(world.browser, world.host.url);
    await next.say("A new chat arrives");
    await page.locator("#conversations > li", { hasText: "A new chat arrives" }).waitFor();
    await page.waitForFunction(() => document.activeElement?.id === "conversations", null, { timeout: 5000 });
    await next.context.close();
    await v.context.close();
  });

test("the live status is in the page from the start and only its text changes", { timeout: 60000 }, async () => {
  let blocked = true;
  await page.route("**/inbox/events**", (route) => (blocked ? route.abort() : route.continue()));
  await page.goto(`${world.porch.url}/inbox`);
  const status = page.locator("[data-live-status]");
  await textIs(status, "Reconnecting…");
  const down = await region(status);
  assert.deepEqual({ ...down, height: down.height > 0 },
    { hidden: false, display: "block", role: "status", text: "Reconnecting…", height: true });

  blocked = false;
  await textIs(status, "");
  // Still there for screen readers, taking no room on screen.
  assert.deepEqual(await region(status), { hidden: false, display: "block", role: "status", text: "", height: 0 });
  await page.unroute("**/inbox/events**");
});

test("Visitor is typing… comes into a status region that was there all along", { timeout: 60000 }, async () => {
  const v = await visitor(world.browser, world.host.url);
  await v.say("Do you ship abroad?");
  await page.goto(`${world.porch.url}/inbox`);
  await page.locator("#conversations li", { hasText: "Do you ship abroad?" }).locator("a").click();
  await page.waitForURL(/\/conversations\/\d+$/);
  // The counts arrive once the page's stream follows the hub: from then on nothing is missed.
  await page.locator("body[data-needs]").waitFor({ state: "attached" });
  const typing = page.locator("#visitor-typing");
  const quiet = { hidden: false, display: "block", role: "status", text: "", height: 0 };
  assert.deepEqual(await region(typing), quiet);
  assert.deepEqual(await region(page.locator("[data-live-status]")), quiet);

  await v.page.locator("[data-porch=input]").pressSequentially("Also", { delay: 30 });
  await textIs(typing, "Visitor is typing…");
  assert.equal(await typing.isVisible(), true);
  await v.page.locator("[data-porch=input]").blur();
  await textIs(typing, "");
  assert.deepEqual(await region(typing), quiet);
  await v.context.close();
});

test("a refused reply marks the box invalid, described by the reason, until the box is edited",
  { timeout: 60000 }, async () => {
    // The conversation page of the test before.
    const box = page.locator("#reply-body");
    const error = page.locator("#reply-error");
    const description = () => box.evaluate((el) => el.getAttribute("aria-describedby").split(" ")
      .map((id) => document.getElementById(id).textContent.trim()).join(" | "));
    assert.equal(await error.getAttribute("role"), "alert");

    await box.evaluate((el) => { el.value = "x".repeat(4001); }); // past the box's maxlength
    await box.press("Enter");
    await error.getByText(/longer than 4,000 characters/).waitFor();
    assert.equal(await box.getAttribute("aria-invalid"), "true");
    assert.match(await description(), /notes are never shown to the visitor \| Not sent: .*longer than 4,000 characters/);

    // The first edit answers it.
    await box.press("Backspace");
    assert.equal(await error.textContent(), "");
    assert.equal(await box.getAttribute("aria-invalid"), null);

    // A failed reply of a file alone, the file removed: Enter in the empty box sends nothing and
    // takes the old failure away.
    const sent = await page.locator(".message-agent").count();
    await box.fill("");
    await page.route("**/conversations/*/reply", (route) => route.fulfill({ status: 503 }));
    await page.locator("#reply-file").setInputFiles({ name: "note.txt", mimeType: "text/plain", buffer: Buffer.from("hello") });
    await page.locator("#reply-files li", { hasText: "ready" }).waitFor();
    await box.press("Enter");
    await error.getByText(/the server could not store it \(503\)/).waitFor();
    assert.equal(await box.getAttribute("aria-invalid"), null, "a server's trouble is not the text's fault");
    await page.getByRole("button", { name: "Remove note.txt" }).click();
    await box.press("Enter");
    assert.equal(await error.textContent(), "");
    assert.equal(await page.locator(".message-agent").count(), sent);
    await page.unroute("**/conversations/*/reply");
  });

/** RFC 4648 base32 (no padding) to bytes. */
function base32(text) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const c of text.replace(/\s/g, "").toUpperCase()) bits += alphabet.indexOf(c).toString(2).padStart(5, "0");
  const bytes = [];
  for (let i = 0; i + 8 <= bits.length; i += 8) bytes.push(parseInt(bits.slice(i, i + 8), 2));
  return Buffer.from(bytes);
}

/** The 6-digit TOTP code (HMAC-SHA-1, 30-second steps) of now. */
function totp(secret) {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 1000 / 30)));
  const hash = createHmac("sha1", secret).update(counter).digest();
  const value = hash.readUInt32BE(hash[19] & 0x0f) & 0x7fffffff;
  return String(value % 1000000).padStart(6, "0");
}

// Last: Ana's sign-in asks for a code from then on.
test("turning two-factor on puts the focus on the news that it is on", { timeout: 60000 }, async () => {
  await page.goto(`${world.porch.url}/account`);
  await page.getByRole("button", { name: "Set up two-factor sign-in" }).click();
  await page.waitForURL(/\/account\/two-factor$/);
  const secret = base32(await page.locator("#totp-secret").innerText());
  await page.getByLabel("Code from the app").fill(totp(secret));
  await page.getByRole("button", { name: "Turn on two-factor sign-in" }).click();
  await page.getByRole("heading", { name: "Your recovery codes" }).waitFor();
  await page.waitForLoadState("load");
  const now = await focused();
  assert.equal(now.tag, "P");
  assert.match(now.text, /^Two-factor sign-in is on\./);
});
