// Typing both ways, with the real widget and the real inbox: the visitor's typing shows on the
// agent's conversation page as "Visitor is typing…" and goes away when the message arrives; the
// agent's typing in the reply box shows in the widget as "Ana is typing" until the reply, and a
// private note being written never does.
import { test } from "node:test";
import assert from "node:assert/strict";
import { PASSWORD, agentPage, fixture, openConversation, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
const COLLEAGUE = { email: "ben@example.com", name: "Ben" };
const world = fixture({ site: "Acme Shop", agent: AGENT }, async ({ porch }) => {
  await porch.cli(["user", "add", "--email", COLLEAGUE.email, "--name", COLLEAGUE.name, "--password-stdin"],
    { input: `${PASSWORD}\n` });
});

test("visitor and agent see each other typing", { timeout: 90000 }, async () => {
  const { porch, browser, host } = world;
  const { context, page } = await agentPage(browser, porch, AGENT.email);

  // Typing goes nowhere before the visitor's first message (there is no conversation yet).
  const v = await visitor(browser, host.url);
  await v.say("Hello");
  await openConversation(page, porch, "Hello");
  const indicator = page.locator("#visitor-typing");
  assert.equal(await indicator.isHidden(), true);

  // The visitor types: the agent sees it; the message replaces it.
  await v.page.locator("[data-porch=input]").pressSequentially("Do you", { delay: 30 });
  await indicator.waitFor({ state: "visible" });
  assert.equal(await indicator.innerText(), "Visitor is typing…");
  await v.page.locator("[data-porch=input]").pressSequentially(" ship to Norway?", { delay: 10 });
  await v.page.locator("[data-porch=input]").press("Enter");
  await page.locator(".message-visitor", { hasText: "ship to Norway?" }).waitFor();
  await indicator.waitFor({ state: "hidden" });

  // The visitor types and leaves the box: the stop reaches the agent at once.
  await v.page.locator("[data-porch=input]").pressSequentially("Also", { delay: 30 });
  await indicator.waitFor({ state: "visible" });
  await v.page.locator("[data-porch=input]").blur();
  await indicator.waitFor({ state: "hidden", timeout: 3000 });

  // The agent types: the widget shows it; the reply replaces it.
  const widgetTyping = v.page.locator("[data-porch=typing]");
  assert.equal(await widgetTyping.isHidden(), true);
  const box = page.getByLabel("Your reply");
  await box.pressSequentially("Yes, we", { delay: 30 });
  await widgetTyping.waitFor({ state: "visible" });
  assert.match(await widgetTyping.innerText(), /^Ana is typing/);
  await box.pressSequentially(" do!", { delay: 10 });
  await box.press("Enter");
  await v.page.locator("[data-porch=message][data-author=agent]", { hasText: "Yes, we do!" }).waitFor();
  await widgetTyping.waitFor({ state: "hidden" });

  // The agent types, then stops for 5 s: the visitor's indicator goes away by itself.
  await box.pressSequentially("One more thing", { delay: 20 });
  await widgetTyping.waitFor({ state: "visible" });
  await waitFor("the agent's typing to stop", () => widgetTyping.isHidden(), { timeoutMs: 9000 });
  await v.context.close();
  await context.close();
});

test("a private note being written never tells the visitor the agent is typing", { timeout: 90000 }, async () => {
  const { porch, browser, host } = world;
  const { context, page } = await agentPage(browser, porch, AGENT.email);
  const signals = [];
  page.on("request", (r) => { if (r.url().endsWith("/typing")) signals.push(r.postData()); });

  const v = await visitor(browser, host.url);
  await v.say("Is my order on its way?");
  await openConversation(page, porch, "my order");
  const box = page.locator("#reply-body");
  const widgetTyping = v.page.locator("[data-porch=typing]");

  // Note mode: the box and its button say so, and nothing about it reaches the visitor.
  await page.getByRole("radio", { name: "Private note" }).check();
  assert.equal(await page.getByRole("button", { name: "Send reply" }).isHidden(), true);
  assert.equal(await page.getByRole("button", { name: "Add note" }).isVisible(), true);
  assert.match(await box.getAttribute("placeholder"), /private note/);
  assert.equal(await page.getByLabel("Your private note").count(), 1, "the box is not named a note");
  await box.pressSequentially("VIP customer, refund without asking", { delay: 25 });
  await box.press("Enter");
  await page.locator(".message-note", { hasText: "refund without asking" }).waitFor();
  assert.deepEqual(signals.filter((s) => s.includes("active=true")), [], "a note announced typing");
  assert.equal(await widgetTyping.isHidden(), true);

  // A reply begun and then turned into a note: the visitor's indicator is withdrawn at once.
  await page.getByRole("radio", { name: "Reply" }).check();
  await box.pressSequentially("Let me check", { delay: 30 });
  await widgetTyping.waitFor({ state: "visible" });
  await page.getByRole("radio", { name: "Private note" }).check();
  await widgetTyping.waitFor({ state: "hidden", timeout: 3000 });
  await box.press("Enter");
  await page.locator(".message-note", { hasText: "Let me check" }).waitFor();
  await v.page.waitForTimeout(300);
  assert.equal(await v.page.getByText("refund without asking").count(), 0, "a note reached the visitor");
  assert.equal(await v.page.getByText("Let me check").count(), 0, "a note reached the visitor");

  // Back on the conversation with no draft, the box is on Reply, the default, whatever was chosen
  // last (typed answers became notes the visitor never got); a note's unsent draft comes back as
  // a note.
  const isNote = () => page.getByRole("radio", { name: "Private note" }).isChecked();
  await page.reload();
  assert.equal(await isNote(), false, "a note sent earlier left the page in note mode");
  await page.getByRole("radio", { name: "Private note" }).check();
  await box.fill("half a note");
  await page.reload();
  assert.equal(await box.inputValue(), "half a note");
  assert.equal(await isNote(), true, "the draft came back as a reply");
  await box.fill("");
  await page.reload();
  assert.equal(await isNote(), false, "an emptied note draft kept note mode");
  await v.context.close();
  await context.close();
});

// Two agents on one conversation: each sees the other writing a reply ("Ana is replying…"), never
// themselves, and never a note being written; the stop on sending hides it at once. An outside
// check had both answer the visitor within 7 s, each unaware of the other.
test("a colleague writing a reply shows on the conversation page", { timeout: 90000 }, async () => {
  const { porch, browser, host } = world;
  const v = await visitor(browser, host.url);
  await v.say("Can I change my delivery address?");
  const ana = await agentPage(browser, porch, AGENT.email);
  const ben = await agentPage(browser, porch, COLLEAGUE.email);
  for (const { page } of [ana, ben]) await openConversation(page, porch, "delivery address");
  const seenByBen = ben.page.locator("#colleague-typing");
  const seenByAna = ana.page.locator("#colleague-typing");
  assert.equal(await seenByBen.isHidden(), true);

  await ana.page.locator("#reply-body").pressSequentially("Sure, what is", { delay: 30 });
  await seenByBen.waitFor({ state: "visible" });
  assert.equal(await seenByBen.innerText(), "\u2068Ana\u2069 is replying…");
  assert.equal(await seenByAna.isHidden(), true, "told of her own typing");
  // Both at once.
  await ben.page.locator("#reply-body").pressSequentially("Hi", { delay: 30 });
  await seenByAna.waitFor({ state: "visible" });
  assert.equal(await seenByAna.innerText(), "\u2068Ben\u2069 is replying…");
  // Ana sends: her stop reaches Ben at once, well before the 6 s the line would last.
  await ana.page.locator("#reply-body").press("Enter");
  await ana.page.locator(".message-agent", { hasText: "Sure, what is" }).waitFor();
  await seenByBen.waitFor({ state: "hidden", timeout: 3000 });
  // A note being written is nobody's reply.
  await ben.page.locator("#reply-body").fill("");
  await seenByAna.waitFor({ state: "hidden", timeout: 9000 });
  await ana.page.getByRole("radio", { name: "Private note" }).check();
  await ana.page.locator("#reply-body").pressSequentially("VIP, be kind", { delay: 30 });
  await ben.page.waitForTimeout(1000);
  assert.equal(await seenByBen.isHidden(), true, "a note was announced");
  for (const { context } of [ana, ben, v]) await context.close();
});
