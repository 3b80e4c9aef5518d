// The IMAP mailbox set on the email page, against a real IMAP server (pymap, tests/deliveries/imap_server.py)
// and the real SMTP server of the Rust tests: an admin fills in the form and saves, the reader turns healthy
// without a restart, "Test connection" reports success, and the password is never shown again.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PASSWORD, REPO, fixture, setupToken, waitFor } from "./harness.js";

const PYTHON = path.join(REPO, "tests/deliveries/.venv/bin/python");

/** Starts a Python test server that prints its port first; returns {proc, port}. */
async function server(script, args = []) {
  const proc = spawn(PYTHON, [path.join(REPO, "tests/deliveries", script), ...args],
    { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise((resolve) => proc.stdout.once("data", (d) => resolve(Number(String(d).trim()))));
  return { proc, port };
}

const mailDir = await mkdtemp(path.join(os.tmpdir(), "porch-mail-"));
const smtp = await server("smtp_sink.py", [mailDir]);
const imap = await server("imap_server.py");

// Read by the server at start-up. No PORCH_IMAP_URL: the page sets the mailbox. The IMAP server is on
// loopback, which the page refuses unless private networks are allowed.
process.env.PORCH_SMTP_URL = `smtp://127.0.0.1:${smtp.port}`;
process.env.PORCH_MAIL_FROM = "Porch <chat@porch.test>";
process.env.PORCH_ALLOW_PRIVATE_NETWORKS = "true";
delete process.env.PORCH_IMAP_URL;

let page;
const world = fixture({ site: "Acme Test" }, async ({ browser, porch }) => {
  page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(15000);
  await page.goto(`${porch.url}/setup`);
  await page.getByLabel("Setup token").fill(await setupToken(porch));
  await page.getByLabel("Your name").fill("Ana");
  await page.getByLabel("Email").fill("ana@example.com");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Create admin account" }).click();
  await page.waitForURL(/\/sites\/new/);
});

after(async () => {
  smtp.proc.kill();
  imap.proc.kill();
  await rm(mailDir, { recursive: true, force: true });
});

test("an admin sets the mailbox on the email page and tests the connection", { timeout: 90000 }, async () => {
  const { porch, site } = world;
  await page.goto(`${porch.url}/sites/${site.key}/email`);
  const card = page.locator("section", { has: page.getByRole("heading", { name: "Replies by email" }) });
  await card.locator("[data-imap-source=page]").waitFor();
  assert.match(await card.innerText(), /no mailbox is set/);

  await card.getByLabel("IMAP server").fill("127.0.0.1");
  await card.getByLabel("TLS", { exact: true }).selectOption("none");
  await card.getByLabel("Port", { exact: true }).fill(String(imap.port));
  await card.getByLabel("User").fill("demouser");
  await card.getByLabel("Password").fill("demopass");
  await card.getByLabel("Look every (seconds)").fill("1");
  await card.getByRole("button", { name: "Save mailbox" }).click();
  await page.waitForURL(/notice=imap-saved/);

  await waitFor("the reader to turn healthy", async () => {
    await page.reload();
    return (await card.locator("[data-reader=healthy]").count()) > 0;
  });
  assert.match(await card.innerText(), /demouser \(password not shown\)/);
  assert.equal(await card.getByLabel("Password").inputValue(), "", "the password field stays empty");

  await card.getByRole("button", { name: "Test connection" }).click();
  await card.locator("[data-imap-test=ok]").waitFor();
  assert.equal((await page.content()).includes("demopass"), false, "the password is never shown");
});
