// The IMAP mailbox set on the email page, against a real IMAP server (pymap, tests/deliveries/imap_server.py)
// and the real SMTP server of the Rust tests: an admin fills in the form and saves, the reader turns healthy
// without a restart, "Test connection" reports success, and the password is never shown again.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { fixture, pythonServer, setUpFirstAdmin, smtpSink, waitFor } from "./harness.js";

const smtp = await smtpSink();
const imap = await pythonServer("imap_server.py");

// Read by the server at start-up. No PORCH_IMAP_URL: the page sets the mailbox. The IMAP server is on
// loopback, which the page refuses unless private networks are allowed.
Object.assign(process.env, smtp.env);
process.env.PORCH_ALLOW_PRIVATE_NETWORKS = "true";
delete process.env.PORCH_IMAP_URL;

let page;
const world = fixture({ site: "Acme Test" }, async ({ browser, porch }) => {
  page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(15000);
  await setUpFirstAdmin(page, porch);
});

after(async () => {
  imap.proc.kill();
  await smtp.close();
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
