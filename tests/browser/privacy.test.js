// Privacy (docs/privacy.md): a visitor downloads their conversation and deletes their data from the
// widget's menu; an admin finds a person on /privacy, downloads their export, erases them after the
// confirmation page, and an agent's open conversation page is told.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { fixture, signIn, visitor, waitFor } from "./harness.js";

const world = fixture({ site: "Acme Privacy", agent: { email: "ana@example.com", name: "Ana" }, email: true });

/** The id of the visitor's conversation, through the API. */
async function conversationOf(porch, body) {
  return waitFor("the conversation in the API", async () => {
    const { body: list } = await porch.api("GET", "/conversations");
    for (const c of list.conversations || list) {
      const { body: messages } = await porch.api("GET", `/conversations/${c.id}/messages`);
      if ((messages.messages || messages).some((m) => m.body === body)) return c.id;
    }
    return null;
  });
}

test("a visitor downloads their conversation and deletes their data from the widget", { timeout: 90000 }, async () => {
  const { host, browser, porch } = world;
  const v = await visitor(browser, host.url);
  const { page } = v;
  await v.say("my unique question 4711");
  const id = await conversationOf(porch, "my unique question 4711");
  assert.equal((await porch.api("POST", `/conversations/${id}/messages`, { body: "Here is the answer" })).status, 201);
  await page.locator("[data-porch=message][data-author=agent]").waitFor();

  await page.locator("[data-porch=data-button]").click();
  const [json] = await Promise.all([page.waitForEvent("download"), page.locator("[data-porch=download-json]").click()]);
  assert.equal(json.suggestedFilename(), "conversation.json");
  const doc = JSON.parse(await readFile(await json.path(), "utf8"));
  assert.deepEqual(doc.conversations[0].messages.map((m) => m.body), ["my unique question 4711", "Here is the answer"]);

  await page.locator("[data-porch=data-button]").click();
  const [text] = await Promise.all([page.waitForEvent("download"), page.locator("[data-porch=download-text]").click()]);
  assert.equal(text.suggestedFilename(), "conversation.txt");
  const transcript = await readFile(await text.path(), "utf8");
  assert.match(transcript, /You: my unique question 4711/);
  assert.match(transcript, /Ana: Here is the answer/);

  // The confirm step, then a fresh start: no history, a new token, and nothing left on the server.
  const tokenBefore = await page.evaluate(() => Object.entries(localStorage).find(([k]) => k.endsWith(":token"))?.[1]);
  // A draft is kept in the browser too, and goes with the rest.
  await page.locator("[data-porch=input]").fill("a draft to forget");
  const drafts = () => page.evaluate(() => Object.keys(localStorage).filter((k) => k.endsWith(":draft")).length);
  assert.equal(await drafts(), 1);
  await page.locator("[data-porch=data-button]").click();
  await page.locator("[data-porch=erase]").click();
  await page.locator("[data-porch=erase-confirm]").click();
  await page.locator("[data-porch=error]", { hasText: "Your data was deleted." }).waitFor();
  // Done as asked: said in the panel's own colours, not an error's red.
  assert.equal(await page.locator("[data-porch=error]").getAttribute("data-done"), "");
  await waitFor("the history to be gone", async () =>
    (await page.locator("[data-porch=message]").count()) === 0);
  await page.locator("[data-porch=status][data-state=connected]").waitFor();
  const tokenAfter = await page.evaluate(() => Object.entries(localStorage).find(([k]) => k.endsWith(":token"))?.[1]);
  assert.ok(tokenAfter && tokenAfter !== tokenBefore, "a new visitor token");
  assert.equal(await drafts(), 0, "the draft is forgotten");
  assert.equal((await porch.api("GET", `/conversations/${id}/messages`)).status, 404);
  await v.say("hello again");
  await v.context.close();
});

// The address went with the rest: the panel must not go on saying replies will go there, and the next
// visitor is offered the form afresh.
test("after deleting their data the visitor's saved address is no longer shown, and the form is offered again",
  { timeout: 90000 }, async () => {
    const { host, browser } = world;
    const v = await visitor(browser, host.url);
    await v.say("my address goes too");
    await v.page.locator("[data-porch=email-input]").fill("gone.soon@example.org");
    await v.page.locator("[data-porch=email] button").click();
    await v.page.locator("[data-porch=email-saved]").waitFor();
    // An agent answered the old visitor: that must not keep the form from the next one.
    const id = await conversationOf(world.porch, "my address goes too");
    assert.equal((await world.porch.api("POST", `/conversations/${id}/messages`, { body: "Noted" })).status, 201);
    await v.page.locator("[data-porch=message][data-author=agent]").waitFor();
    await v.page.locator("[data-porch=data-button]").click();
    await v.page.locator("[data-porch=erase]").click();
    await v.page.locator("[data-porch=erase-confirm]").click();
    await v.page.locator("[data-porch=error]", { hasText: "Your data was deleted." }).waitFor();
    await v.page.locator("[data-porch=status][data-state=connected]").waitFor();
    assert.equal(await v.page.locator("[data-porch=email-saved]").count(), 0);
    assert.equal(await v.page.locator("[data-porch=email]").isVisible(), false);
    await v.say("a new visitor now");
    await v.page.locator("[data-porch=email-input]").waitFor({ state: "visible" });
    assert.equal(await v.page.locator("[data-porch=email-input]").inputValue(), "");
    assert.doesNotMatch(await v.page.locator("[data-porch=email]").innerText(), /gone\.soon/);
    await v.context.close();
  });

test("an admin finds, exports and erases a person; an open conversation page is told", { timeout: 90000 }, async () => {
  const { host, browser, porch } = world;
  const v = await visitor(browser, host.url);
  await v.say("please erase me 9902");
  await v.page.locator("[data-porch=email-input]").fill("erase.me@example.org");
  await v.page.locator("[data-porch=email] button").click();
  await v.page.locator("[data-porch=email-saved]").waitFor();
  const id = await conversationOf(porch, "please erase me 9902");

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const agentPage = await context.newPage();
  agentPage.setDefaultTimeout(15000);
  await signIn(agentPage, porch, "ana@example.com");
  await agentPage.goto(`${porch.url}/conversations/${id}`);
  await agentPage.getByText("please erase me 9902").waitFor();
  // A reply begun when the erasure comes: its draft goes with the page's reply box.
  await agentPage.locator("#reply-form textarea").fill("a reply never sent");
  const drafts = () => agentPage.evaluate(() =>
    Object.keys(sessionStorage).filter((key) => key.startsWith("porch-draft:")).length);
  assert.equal(await drafts(), 1);

  const admin = await context.newPage();
  admin.setDefaultTimeout(15000);
  await admin.goto(`${porch.url}/privacy`);
  await admin.getByLabel("Email address or visitor id").fill("ERASE.ME@example.org");
  await admin.getByRole("button", { name: "Find" }).click();
  const row = admin.locator("tr", { hasText: "erase.me@example.org" });
  await row.waitFor();
  const [download] = await Promise.all([admin.waitForEvent("download"), row.getByRole("button", { name: "Download JSON" }).click()]);
  const doc = JSON.parse(await readFile(await download.path(), "utf8"));
  assert.equal(doc.visitor.email, "erase.me@example.org");
  assert.equal(doc.conversations[0].messages[0].body, "please erase me 9902");

  await row.getByRole("link", { name: "Erase…" }).click();
  await admin.getByRole("heading", { name: /Erase visitor v\d+\?/ }).waitFor();
  assert.match(await admin.locator("main, body").first().innerText(), /erase\.me@example\.org/);
  await admin.getByRole("button", { name: "Erase visitor" }).click();
  await admin.getByText("Erased. The audit log records it, without the data.").waitFor();

  await agentPage.getByText("This visitor's data was erased.").waitFor();
  assert.equal(await agentPage.getByText("please erase me 9902").count(), 0);
  for (const gone of ["#reply-form", "#conversation-aside", "#email-visitor", ".email-visitor-off",
    "form[action^='/conversations/']"]) {
    assert.equal(await agentPage.locator(gone).count(), 0, gone);
  }
  assert.equal(await drafts(), 0, "the draft to the erased visitor is kept");
  assert.equal(await agentPage.locator(".page-head h1").innerText(), "Erased visitor");
  assert.match(await agentPage.title(), /^(\(\d+\) )?Erased visitor · Porch$/, "the tab title drops the name");
  assert.doesNotMatch(await agentPage.locator("body").innerText(), /erase\.me@example\.org/);
  // The visitor's open widget starts again as a new visitor.
  await waitFor("the widget to forget the history", async () =>
    (await v.page.locator("[data-porch=message]").count()) === 0);

  await admin.goto(`${porch.url}/audit?action=privacy`);
  await admin.getByText("privacy.erased").first().waitFor();
  assert.doesNotMatch(await admin.locator("table").innerText(), /erase\.me@example\.org/);
  await context.close();
  await v.context.close();
});

test("a page loaded just before its visitor's erasure says the conversation is gone", { timeout: 90000 }, async () => {
  const { host, browser, porch } = world;
  const v = await visitor(browser, host.url);
  await v.say("erase me between load and stream 3318");
  const id = await conversationOf(porch, "erase me between load and stream 3318");
  const { body: conversation } = await porch.api("GET", `/conversations/${id}`);

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const agentPage = await context.newPage();
  agentPage.setDefaultTimeout(15000);
  await signIn(agentPage, porch, "ana@example.com");
  // The page is loaded, then its stream waits until the erasure is done: the erasure's live
  // event is long past when the stream begins, and nothing of the conversation is left.
  let release;
  const erased = new Promise((resolve) => { release = resolve; });
  await agentPage.route(`**/conversations/${id}/events**`, async (route) => { await erased; await route.continue(); });
  await agentPage.goto(`${porch.url}/conversations/${id}`);
  await agentPage.getByText("erase me between load and stream 3318").waitFor();
  assert.equal((await porch.api("POST", `/visitors/${conversation.visitor_id}/erase`)).status, 200);
  release();

  await agentPage.getByText("This conversation no longer exists: its visitor's data was erased, or it was deleted.").waitFor();
  assert.equal(await agentPage.getByText("erase me between load and stream 3318").count(), 0);
  assert.equal(await agentPage.locator("#reply-form").count(), 0);
  assert.equal(await agentPage.locator(".page-head h1").innerText(), "Conversation gone");
  assert.match(await agentPage.title(), /^(\(\d+\) )?Conversation gone · Porch$/);
  await agentPage.locator("body").press("e");
  await agentPage.locator("#keys-said", { hasText: "it was deleted. Nothing is left to act on." }).waitFor();
  await context.close();
  await v.context.close();
});
