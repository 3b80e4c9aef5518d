// "Forgot your password?" as a person who forgot it: from the sign-in page to a mailed link (a real
// SMTP server), a new password, and the inbox; the old password no longer works.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, waitFor } from "./harness.js";

const ADMIN = { email: "ana@example.com", name: "Ana" };
const world = fixture({ agent: ADMIN, email: true });

test("a forgotten password is replaced through the mailed link", { timeout: 60000 }, async () => {
  const { porch, browser } = world;
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  await page.goto(`${porch.url}/login`);
  await page.getByRole("link", { name: "Forgot your password?" }).click();
  await page.waitForURL(/\/password-resets$/);
  assert.equal(await page.getByRole("heading", { level: 1 }).innerText(), "Forgot your password?");
  // The address field has focus, so typing starts at once.
  assert.equal(await page.evaluate(() => document.activeElement.id), "email");
  await page.keyboard.type(ADMIN.email);
  await page.getByRole("button", { name: "Mail me a link" }).click();
  const status = page.getByRole("status");
  assert.match(await status.innerText(), /If ana@example\.com is the address of an account here, a link/);

  const [mail] = await waitFor("the mail", async () => { const m = await world.smtp.mails(); return m.length ? m : null; });
  assert.deepEqual(mail.rcpt_tos, [ADMIN.email]);
  const link = mail.text.match(/http\S+\/password-resets\/\S+/)[0];
  await page.goto(link);
  await page.getByLabel("New password", { exact: true }).fill("a brand new passphrase");
  await Promise.all([page.waitForURL(/\/inbox/), page.getByRole("button", { name: "Save password" }).click()]);

  // Signed in with the new password; the old one is refused.
  await signIn(page, porch, ADMIN.email, "a brand new passphrase");
  assert.match(new URL(page.url()).pathname, /^\/(inbox|sites)/);
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.waitForURL(/\/login/);
  await page.getByLabel("Email").fill(ADMIN.email);
  await page.getByLabel("Password").fill("correct horse battery staple");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText("Wrong email or password.").waitFor();
  await context.close();
});
