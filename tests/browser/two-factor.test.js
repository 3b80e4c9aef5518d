// Two-factor sign-in as a person does it: set it up on the account page by reading the secret
// off the page into an "authenticator" (RFC 6238 computed here in Node), keep the recovery codes,
// sign out, sign in with a code, then sign in with a recovery code.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { PASSWORD, fixture, setUpFirstAdmin, snap } from "./harness.js";

let page;
const world = fixture({}, async ({ browser }) => {
  page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(15000);
});

/** RFC 4648 base32 (no padding) to bytes. */
function base32(text) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const c of text.replace(/\s/g, "").toUpperCase()) {
    bits += alphabet.indexOf(c).toString(2).padStart(5, "0");
  }
  const bytes = [];
  for (let i = 0; i + 8 <= bits.length; i += 8) bytes.push(parseInt(bits.slice(i, i + 8), 2));
  return Buffer.from(bytes);
}

/** The 6-digit TOTP code (HMAC-SHA-1, 30-second steps) of the current step plus `delta`. */
function totp(secret, delta = 0) {
  const step = Math.floor(Date.now() / 1000 / 30) + delta;
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const hash = createHmac("sha1", secret).update(counter).digest();
  const at = hash[19] & 0x0f;
  const value = hash.readUInt32BE(at) & 0x7fffffff;
  return String(value % 1000000).padStart(6, "0");
}

async function signOut() {
  await Promise.all([page.waitForURL(/\/login/),
    page.getByRole("button", { name: "Sign out" }).click()]);
}

async function password() {
  await page.goto(`${world.porch.url}/login`);
  await page.getByLabel("Email").fill("ana@example.com");
  await page.getByLabel("Password").fill(PASSWORD);
  await Promise.all([page.waitForURL(/\/login\/two-factor$/),
    page.getByRole("button", { name: "Sign in" }).click()]);
}

test("set up two-factor, then sign in with a code and with a recovery code", { timeout: 90000 }, async () => {
  const { porch } = world;
  await setUpFirstAdmin(page, porch);

  await page.goto(`${porch.url}/account`);
  await page.getByRole("button", { name: "Set up two-factor sign-in" }).click();
  await page.waitForURL(/\/account\/two-factor$/);
  const qr = page.getByRole("img", { name: /QR code/ });
  assert.ok(await qr.isVisible(), "the QR code is drawn");
  assert.ok((await qr.boundingBox()).width > 100);
  const uri = await page.locator("#totp-uri").getAttribute("href");
  assert.match(uri, /^otpauth:\/\/totp\/Porch:ana@example\.com\?secret=[A-Z2-7]+&issuer=Porch/);
  const secret = base32(await page.locator("#totp-secret").innerText());
  assert.equal(secret.length, 20);
  await snap(page, "two-factor-setup");

  await page.getByLabel("Code from the app").fill(totp(secret));
  await page.getByRole("button", { name: "Turn on two-factor sign-in" }).click();
  await page.getByRole("heading", { name: "Your recovery codes" }).waitFor();
  const codes = await page.locator("#recovery-codes code").allInnerTexts();
  await snap(page, "two-factor-recovery-codes");
  assert.equal(codes.length, 10);
  await page.getByRole("link", { name: "Continue" }).click();
  await page.waitForURL(/notice=two-factor-on/);
  assert.equal(await page.locator("#recovery-left").innerText(), "10");

  // Sign in with a code: the one just used is spent, the next step's is accepted (skew).
  await signOut();
  await password();
  assert.ok(!(await page.context().cookies()).some((c) => c.name === "porch_session"),
    "no session before the second factor");
  await page.locator("#code").fill("000000");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").filter({ hasText: "not right" }).waitFor();
  await page.locator("#code").fill(totp(secret, 1));
  await Promise.all([page.waitForURL(/\/inbox/),
    page.getByRole("button", { name: "Sign in" }).click()]);

  // Sign in with a recovery code, typed loosely.
  await signOut();
  await password();
  await page.locator("#code").fill(codes[0].toUpperCase());
  await Promise.all([page.waitForURL(/\/inbox/),
    page.getByRole("button", { name: "Sign in" }).click()]);
  await page.goto(`${porch.url}/account`);
  assert.equal(await page.locator("#recovery-left").innerText(), "9");

  // The same recovery code does not work twice.
  await signOut();
  await password();
  await page.locator("#code").fill(codes[0]);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").filter({ hasText: "not right" }).waitFor();
  assert.match(new URL(page.url()).pathname, /^\/login\/two-factor$/);
});
