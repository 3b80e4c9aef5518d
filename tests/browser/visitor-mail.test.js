// "Email the visitor" as an agent uses it, against the real SMTP server of the Rust tests
// (tests/deliveries/smtp_sink.py): a visitor chats and leaves an address, an admin turns email on, the agent
// opens the conversation, writes a mail with a subject, and sends it; the visitor sees it in the widget at
// once, the SMTP server receives it from the install's address, and after a reload the message is marked as
// sent by email (the subject shown as text) with its delivery posted.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { fixture, setUpFirstAdmin, smtpSink, visitor, waitFor } from "./harness.js";

const smtp = await smtpSink();
// Read by the server at start-up (the fixture starts it after this module's top level ran).
Object.assign(process.env, smtp.env);

const world = fixture({ site: "Acme Test" });

after(() => smtp.close());

test("an agent emails a visitor from the conversation page", { timeout: 90000 }, async () => {
  const { porch, site, host, browser } = world;
  // Email first: the widget asks for an address only when replies can be mailed.
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(15000);
  await setUpFirstAdmin(page, porch);
  await page.goto(`${porch.url}/sites/${site.key}/email`);
  await page.getByRole("button", { name: "Turn on email" }).click();
  await page.waitForURL(/notice=/);
  // Then the visitor: the widget offers to take an address only while no agent has the inbox open.
  // Leaving the page closes its live stream; wait until the server has seen the close (tens of
  // milliseconds), or the widget is told an agent is online.
  await page.goto("about:blank");
  await waitFor("the admin page's stream to end", async () =>
    /^porch_agent_connections 0$/m.test(await (await fetch(`${porch.url}/metrics`)).text()), { timeoutMs: 30000 });
  const v = await visitor(browser, host.url);
  await v.say("Do you have the jumper in blue?");
  await v.page.locator("[data-porch=email-input]").fill("bea@example.org");
  await v.page.locator("[data-porch=email] button").click();
  await v.page.locator("[data-porch=email-saved]").waitFor();

  await page.goto(`${porch.url}/inbox`);
  await page.locator("#conversations li", { hasText: "jumper in blue" }).locator("a").click();
  await page.waitForURL(/\/conversations\/\d+/);
  const box = page.locator("#email-visitor");
  assert.match(await box.innerText(), /Email the visitor/);
  await box.getByText("Email the visitor").click();
  assert.match(await box.innerText(), /To bea@example\.org/);
  assert.equal(await page.getByLabel("Subject", { exact: true }).inputValue(), "Your conversation on Acme Test");
  await page.getByLabel("Subject", { exact: true }).fill("Blue jumpers <b>back</b>");
  await page.getByLabel("Message", { exact: true }).fill("They are back in stock tomorrow.");
  await page.getByRole("button", { name: "Send email" }).click();
  // The answer's address, then its notice: not the page's load event, which a loaded machine (a CI
  // run) held back past the wait once.
  await page.waitForURL(/notice=mail-queued/, { waitUntil: "commit" });
  await page.getByText("Mail queued to the visitor").waitFor();

  // The visitor, still on the page, sees it as the agent's message.
  await v.page.locator("[data-porch=message][data-author=agent]", { hasText: "back in stock tomorrow" }).waitFor();

  const [mail] = await waitFor("the mail at the SMTP server", async () => {
    const got = await smtp.mails();
    return got.length > 0 && got;
  });
  assert.deepEqual(mail.rcpt_tos, ["bea@example.org"]);
  assert.equal(mail.headers.subject, "Blue jumpers <b>back</b>");
  assert.equal(mail.headers["reply-to"], "Porch <chat@porch.test>");
  assert.match(mail.text, /^They are back in stock tomorrow\./);

  const message = page.locator(".message-agent", { hasText: "back in stock tomorrow" });
  await waitFor("the delivery to show as posted", async () => {
    await page.reload();
    return (await message.locator(".delivery-posted").count()) > 0;
  });
  assert.match(await message.locator("[data-emailed]").innerText(), /sent by email: .?Blue jumpers <b>back<\/b>/);
  assert.equal(await message.locator("[data-emailed] b").count(), 0, "the subject is shown as text");
});
