// Replies by email as an admin sees them, against a real IMAP server (pymap, tests/deliveries/imap_server.py)
// and the real SMTP server of the Rust tests: the email page shows the mailbox (never its password) and the
// reader's health; a mail that answers no Porch mail arrives, "Check now" reads it at once, and it is listed
// as refused with the reason, its subject shown as text.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { PYTHON, fixture, pythonServer, setUpFirstAdmin, smtpSink, waitFor } from "./harness.js";

const smtp = await smtpSink();
const imap = await pythonServer("imap_server.py");

/** Puts a mail into the test mailbox with IMAP APPEND (Python's imaplib, a real client). */
function deliver(raw) {
  const code = "import imaplib,sys\nm=imaplib.IMAP4('127.0.0.1',int(sys.argv[1]))\nm.login('demouser','demopass')\n"
    + "m.append('INBOX',None,None,sys.argv[2].encode())\nm.logout()\n";
  return new Promise((resolve, reject) => execFile(PYTHON, ["-c", code, String(imap.port), raw],
    (err) => (err ? reject(err) : resolve())));
}

// The server reads these at start-up (the fixture starts it after this module's top level ran). An hour
// between looks: only "Check now" reads the mail this test delivers.
Object.assign(process.env, smtp.env);
process.env.PORCH_IMAP_URL = `imap://demouser:demopass@127.0.0.1:${imap.port}/INBOX`;
process.env.PORCH_IMAP_POLL = "1h";

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

test("an admin checks the mailbox now and sees a stray mail refused with the reason", { timeout: 60000 }, async () => {
  const { porch, site } = world;
  await page.goto(`${porch.url}/sites/${site.key}/email`);
  const card = page.locator("section", { has: page.getByRole("heading", { name: "Replies by email" }) });
  await card.locator("[data-imap=set]").waitFor();
  assert.match(await card.innerText(), /127\.0\.0\.1:\d+/);
  assert.match(await card.innerText(), /demouser \(password not shown\)/);
  assert.equal((await page.content()).includes("demopass"), false, "the password is never shown");
  // The first look at start-up found an empty mailbox.
  await waitFor("the first look", async () => {
    await page.reload();
    return (await card.locator("[data-reader=healthy]").count()) > 0;
  });

  await deliver("From: Nosy <nosy@example.net>\r\nTo: chat@porch.test\r\nSubject: <img src=x onerror=alert(1)> hi\r\n"
    + "Message-ID: <nosy-1@example.net>\r\n\r\nAnyone?\r\n");
  await card.getByRole("button", { name: "Check now" }).click();
  await page.waitForURL(/notice=imap-checking/);
  const row = card.locator("tr[data-outcome=refused]");
  await waitFor("the mail in the list", async () => {
    await page.reload();
    return (await row.count()) > 0;
  });
  const text = await row.innerText();
  assert.match(text, /nosy@example\.net/);
  assert.match(text, /<img src=x onerror=alert\(1\)> hi/, "the subject is shown as text");
  assert.match(text, /not a reply to a Porch mail/);
  assert.equal(await card.locator("img").count(), 0, "no markup from the mail");
});
