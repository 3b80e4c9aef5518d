// Keyboard and focus: the skip link comes first; j/k move through the list and, on a
// conversation page, to the next and previous conversation of the list; opening one focuses the
// reply box; e closes, a assigns to me (on the list and on the page) an unassigned conversation
// and says why it leaves a colleague's alone; each says what it did (on the list, e with Undo,
// and z undoes), or why not; / focuses the search box
// when there is one; ? opens an accessible list of the keys (focus kept inside, Escape closes);
// nothing fires while typing in a field or with a modifier key; a live change of the side panel
// keeps the focus in it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
let page;
const world = fixture({ site: "Acme Shop", agent: AGENT }, async ({ porch, browser, host }) => {
  // Three conversations, newest first in the list: Third, Second, First.
  for (const text of ["First chat", "Second chat", "Third chat"]) {
    const v = await visitor(browser, host.url);
    await v.say(text);
    await v.context.close();
  }
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, AGENT.email);
});

const focused = () => page.evaluate(() => {
  const el = document.activeElement;
  return { id: el?.id, tag: el?.tagName, text: el?.textContent?.trim().slice(0, 80) ?? "" };
});
// What the keys said, under the heading.
const said = () => page.locator("#keys-said");
const rowIds = () => page.locator("#conversations > li").evaluateAll((lis) => lis.map((li) => li.dataset.id));

test("the skip link is first and leads to the list", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/inbox`);
  await page.keyboard.press("Tab");
  assert.equal((await focused()).text, "Skip to conversations");
  await page.keyboard.press("Enter");
  assert.equal((await focused()).id, "conversations");
});

test("j and k move through the list; Enter opens; the reply box has focus", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/inbox`);
  const ids = await rowIds();
  assert.equal(ids.length, 3);
  await page.keyboard.press("j");
  assert.match((await focused()).text, /Third chat/);
  await page.keyboard.press("j");
  assert.match((await focused()).text, /Second chat/);
  await page.keyboard.press("k");
  assert.match((await focused()).text, /Third chat/);
  // With a modifier, nothing moves.
  await page.keyboard.press("Control+j");
  assert.match((await focused()).text, /Third chat/);
  await Promise.all([page.waitForURL(new RegExp(`/conversations/${ids[0]}$`)), page.keyboard.press("Enter")]);
  assert.equal((await focused()).id, "reply-body");
});

/** A conversation page focuses its reply box once loaded; Escape before that leaves nothing. */
const replyFocused = () => page.waitForFunction(() => document.activeElement?.tagName === "TEXTAREA");

test("on a conversation page, j and k go to the next and previous conversation of the list",
  { timeout: 30000 }, async () => {
    await page.goto(`${world.porch.url}/inbox`);
    const ids = await rowIds();
    await page.goto(`${world.porch.url}/conversations/${ids[0]}`);
    await replyFocused();
    // Typing j in the reply box types a j.
    await page.keyboard.press("j");
    assert.equal(await page.getByLabel("Your reply").inputValue(), "j");
    assert.match(page.url(), new RegExp(`/conversations/${ids[0]}$`));
    await page.getByLabel("Your reply").fill("");
    // Escape leaves the box; then j moves on.
    // Each new page focuses its reply box; Escape must come after that, or it leaves nothing. It leaves
    // the focus in the page's main region, not on <body>, where a screen reader would lose its place.
    await page.keyboard.press("Escape");
    assert.equal((await focused()).id, "main");
    await Promise.all([page.waitForURL(new RegExp(`/conversations/${ids[1]}$`)), page.keyboard.press("j")]);
    await replyFocused();
    await page.keyboard.press("Escape");
    await Promise.all([page.waitForURL(new RegExp(`/conversations/${ids[2]}$`)), page.keyboard.press("j")]);
    await replyFocused();
    await page.keyboard.press("Escape");
    await Promise.all([page.waitForURL(new RegExp(`/conversations/${ids[1]}$`)), page.keyboard.press("k")]);
  });

test("a assigns to me and e closes, on the conversation page", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/inbox`);
  const [id] = await rowIds();
  await page.goto(`${world.porch.url}/conversations/${id}`);
  await replyFocused();
  await page.keyboard.press("Escape");
  await page.keyboard.press("a");
  await page.getByText("Ana took this conversation").waitFor();
  await page.getByRole("status").filter({ hasText: "Assigned to you." }).waitFor();
  // Taken, the agent writes: the letters go into the reply box (an "e" must not close the chat).
  await replyFocused();
  await page.keyboard.type("here");
  assert.equal(await page.getByLabel("Your reply").inputValue(), "here");
  await page.getByLabel("Your reply").fill("");
  await page.keyboard.press("Escape");
  await page.keyboard.press("e");
  await page.getByText("Ana closed this conversation").waitFor();
  await page.getByRole("status").filter({ hasText: "Conversation closed. Reopen undoes it" }).waitFor();
  await page.getByRole("button", { name: "Reopen conversation" }).waitFor();
  // The notice is news once: the address drops it, so a reload does not say it again.
  await page.waitForURL(new RegExp(`/conversations/${id}$`));
  await page.reload();
  await page.getByRole("button", { name: "Reopen conversation" }).waitFor();
  assert.equal(await page.getByText("Conversation closed. Reopen undoes it").count(), 0);
  // Closed already: e says so.
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  await page.keyboard.press("e");
  await said().filter({ hasText: "This conversation is closed already." }).waitFor();
});

test("a and e act on the focused row of the list", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/inbox`);
  const row = page.locator("#conversations > li", { hasText: "Second chat" });
  await row.waitFor();
  await page.keyboard.press("j"); // the first row is now Second chat (Third was closed)
  assert.match((await focused()).text, /Second chat/);
  await page.keyboard.press("a");
  await waitFor("the row to show the assignee", async () =>
    (await row.locator(".assignee").innerText()) === "You");
  await said().filter({ hasText: /^Assigned the conversation with Visitor #\d+ to you\.$/ }).waitFor();
  // The live stream replaced the row; the focus stays on it, so e acts on it with no click.
  await waitFor("the focus back on the row", async () => /Second chat/.test((await focused()).text));
  // Yours already: a says so and posts nothing.
  await page.keyboard.press("a");
  await said().filter({ hasText: "This conversation is assigned to you already." }).waitFor();
  await page.keyboard.press("e");
  await row.waitFor({ state: "detached" });
  // The closed row left the list; the focus goes to the one that took its place.
  await waitFor("the focus on the next row", async () => /First chat/.test((await focused()).text));
  await said().filter({ hasText: /^Closed the conversation with Visitor #\d+\. Undo$/ }).waitFor();

  // z undoes it: the row comes back, with the focus.
  await page.keyboard.press("z");
  await row.waitFor();
  await said().filter({ hasText: /^Reopened the conversation with Visitor #\d+\.$/ }).waitFor();
  await waitFor("the focus on the reopened row", async () => /Second chat/.test((await focused()).text));
  // Nothing more to undo: z does nothing (it posts nothing, so nothing is pending either).
  await page.keyboard.press("z");
  assert.equal(await row.count(), 1);
  assert.match(await said().innerText(), /^Reopened /);

  // And so does the notice's Undo button.
  await page.keyboard.press("e");
  await row.waitFor({ state: "detached" });
  await said().getByRole("button", { name: "Undo" }).click();
  await row.waitFor();
  await waitFor("the focus on the reopened row", async () => /Second chat/.test((await focused()).text));
  await page.keyboard.press("e");
  await row.waitFor({ state: "detached" });
});

test("on the Closed tab e says the row is closed already; Undo after the visitor wrote says why it stays closed",
  { timeout: 60000 }, async () => {
    const { porch, browser, host } = world;
    await page.goto(`${porch.url}/inbox?filter=closed`);
    const closedRow = page.locator("#conversations > li", { hasText: "Second chat" });
    await closedRow.locator("a").focus();
    await page.keyboard.press("e");
    await said().filter({ hasText: /is already closed\.$/ }).waitFor();
    assert.equal(await closedRow.count(), 1);

    const v = await visitor(browser, host.url);
    await v.say("Fourth chat");
    await page.goto(`${porch.url}/inbox`);
    const fourth = page.locator("#conversations > li", { hasText: "Fourth chat" });
    await fourth.locator("a").focus();
    await page.keyboard.press("e");
    await fourth.waitFor({ state: "detached" });
    await said().getByRole("button", { name: "Undo" }).waitFor();
    // The visitor writes again before the Undo: their message starts a newer conversation.
    await v.say("Still there?");
    await page.locator("#conversations > li", { hasText: "Still there?" }).waitFor();
    await page.keyboard.press("z");
    await said().filter({ hasText: /^Could not reopen the conversation with Visitor #\d+\. The visitor has started a newer conversation since/ }).waitFor();
    const newer = said().getByRole("link", { name: "Open the newer conversation" });
    assert.match(await newer.getAttribute("href"), /^\/conversations\/\d+\?error=newer$/);
    assert.equal(await fourth.count(), 0);
    await v.context.close();
  });

test("a leaves a colleague's conversation alone and says so", { timeout: 60000 }, async () => {
  const { porch } = world;
  await porch.cli(["user", "add", "--email", "bo@example.com", "--name", "Bo", "--role", "agent",
    "--password-stdin"], { input: "correct horse battery staple\n" });
  await page.goto(`${porch.url}/inbox`);
  const row = page.locator("#conversations > li", { hasText: "First chat" });
  await row.locator("a").click();
  await page.waitForURL(/\/conversations\/\d+$/);
  await page.getByLabel("Assignee").selectOption({ label: "Bo" });
  await page.getByRole("button", { name: "Assign", exact: true }).click();
  await page.getByText("Ana assigned this conversation to Bo").waitFor();

  await page.locator("body").click({ position: { x: 5, y: 5 } }); // focus out of the reply box
  await page.keyboard.press("a");
  await page.locator("#keys-said", { hasText: "Take over from Bo" }).waitFor();
  await page.goto(`${porch.url}/inbox`);
  await row.waitFor();
  await row.locator("a").focus();
  await page.keyboard.press("a");
  await page.locator("#keys-said", { hasText: "Assigned to Bo" }).waitFor();
  await page.waitForTimeout(500);
  assert.equal(await row.locator(".assignee").innerText(), "Bo", "the key took a colleague's conversation");
});

test("/ focuses the search box when the page has one", { timeout: 30000 }, async () => {
  // A page without one: "/" does nothing.
  await page.goto(`${world.porch.url}/team`);
  await page.keyboard.press("/");
  assert.equal(await page.locator("#inbox-search").count(), 0);
  assert.notEqual((await focused()).tag, "INPUT");
  // The inbox has the search box (docs/admin.md, "Search").
  await page.goto(`${world.porch.url}/inbox`);
  assert.notEqual((await focused()).id, "inbox-search");
  await page.keyboard.press("/");
  assert.equal((await focused()).id, "inbox-search");
  // Typing in it types.
  await page.keyboard.type("j/k");
  assert.equal(await page.locator("#inbox-search").inputValue(), "j/k");
});

test("? lists the keys in a dialog that keeps focus and closes with Escape", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/inbox`);
  const dialog = page.getByRole("dialog", { name: "Keyboard shortcuts" });
  assert.equal(await dialog.isVisible(), false);
  await page.keyboard.press("?");
  await dialog.waitFor();
  for (const key of ["j", "k", "e", "z", "a", "/", "?"]) {
    assert.ok(await dialog.locator("kbd", { hasText: key }).count() >= 1, `the list lacks ${key}`);
  }
  for (let i = 0; i < 4; i++) {
    await page.keyboard.press("Tab");
    const inside = await page.evaluate(() => document.getElementById("keys-help").contains(document.activeElement));
    assert.ok(inside, "focus left the dialog");
  }
  await page.keyboard.press("Escape");
  await dialog.waitFor({ state: "hidden" });
  // Keys do nothing while it is open: j did not move focus behind it.
  await page.keyboard.press("?");
  await dialog.waitFor();
  await page.keyboard.press("j");
  assert.equal(await page.evaluate(() => document.getElementById("keys-help").contains(document.activeElement)), true);
  await page.keyboard.press("Escape");
});

test("turned off in another tab, the keys stop in a tab already open", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/inbox`);
  const other = await page.context().newPage();
  await other.goto(`${world.porch.url}/account`);
  await other.getByRole("checkbox", { name: /Single-key shortcuts/ }).uncheck();
  await page.bringToFront();
  await page.keyboard.press("j");
  assert.notEqual((await focused()).tag, "A", "j moved focus to a row in the tab opened before");
  await other.getByRole("checkbox", { name: /Single-key shortcuts/ }).check();
  await other.close();
  await page.keyboard.press("j");
  await waitFor("j to focus a row again", async () => (await focused()).tag === "A");
});

test("the single-key shortcuts can be turned off, in the dialog or on the account page", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/inbox`);
  const dialog = page.getByRole("dialog", { name: "Keyboard shortcuts" });
  await page.keyboard.press("?");
  await dialog.waitFor();
  const inDialog = dialog.getByRole("checkbox", { name: /Single-key shortcuts/ });
  assert.equal(await inDialog.isChecked(), true);
  await inDialog.uncheck();
  await page.keyboard.press("Escape");
  await dialog.waitFor({ state: "hidden" });
  await page.locator("body").focus();
  // Off: neither j nor ? does anything, also after a reload.
  await page.reload();
  await page.keyboard.press("j");
  assert.notEqual((await focused()).tag, "A", "j moved focus to a row");
  await page.keyboard.press("?");
  assert.equal(await dialog.isVisible(), false);

  await page.goto(`${world.porch.url}/account`);
  const onAccount = page.getByRole("checkbox", { name: /Single-key shortcuts/ });
  assert.equal(await onAccount.isChecked(), false, "the account page shows the same setting");
  await onAccount.check();
  await page.goto(`${world.porch.url}/inbox`);
  await page.keyboard.press("j");
  assert.equal(await rowIds().then((ids) => ids.length > 0), true);
  await waitFor("j to focus a row", async () => (await focused()).tag === "A");
});

test("a live change of the side panel keeps the keyboard focus in it", { timeout: 60000 }, async () => {
  const { porch, browser, host } = world;
  await porch.cli(["user", "add", "--email", "cy@example.com", "--name", "Cy", "--role", "agent",
    "--password-stdin"], { input: "correct horse battery staple\n" });
  const v = await visitor(browser, host.url);
  await v.say("Panel chat");
  await page.goto(`${porch.url}/inbox`);
  await page.locator("#conversations > li", { hasText: "Panel chat" }).locator("a").click();
  await page.waitForURL(/\/conversations\/\d+$/);
  const url = page.url();
  const close = page.getByRole("button", { name: "Close conversation" });
  await close.focus();

  // Cy takes the conversation in another browser: Ana's panel is replaced live.
  const cy = await browser.newContext();
  const cyPage = await cy.newPage();
  cyPage.setDefaultTimeout(15000);
  await signIn(cyPage, porch, "cy@example.com");
  await cyPage.goto(url);
  await cyPage.getByRole("button", { name: "Assign to me" }).click();
  await page.getByRole("button", { name: "Take over from Cy" }).waitFor();
  const focused = await page.evaluate(() => ({
    inAside: Boolean(document.activeElement?.closest("#conversation-aside")),
    text: document.activeElement?.textContent.trim(),
  }));
  assert.deepEqual(focused, { inAside: true, text: "Close conversation" }, "the same control has the focus");
  await cy.close();
  await v.context.close();
});

// A row the agent has focused leaves the list by someone else's doing: the focus goes to the row that took its
// place, and the agent hears so, since the next key would act on a conversation they did not choose.
test("a focused row closed elsewhere: the focus moves on and the agent hears which", { timeout: 60000 }, async () => {
  const { porch, browser, host } = world;
  for (const text of ["Stays here", "Closed elsewhere"]) {
    const v = await visitor(browser, host.url);
    await v.say(text);
    await v.context.close();
  }
  await page.goto(`${porch.url}/inbox`);
  const gone = page.locator("#conversations > li", { hasText: "Closed elsewhere" });
  const stays = page.locator("#conversations > li", { hasText: "Stays here" });
  await gone.locator("a").focus();
  const [goneId, staysName] = [await gone.getAttribute("data-id"), await stays.locator(".visitor bdi").innerText()];
  const goneName = await gone.locator(".visitor bdi").innerText();
  assert.equal((await porch.api("POST", `/conversations/${goneId}/close`)).status, 200);
  await gone.waitFor({ state: "detached" });
  await said().filter({ hasText: `The conversation with ${goneName} left this list, changed elsewhere: ` +
    `the focus is on the conversation with ${staysName}.` }).waitFor();
  assert.match((await focused()).text, /Stays here/);
  // The agent's own e says what it did, not this.
  await page.keyboard.press("e");
  await stays.waitFor({ state: "detached" });
  await said().filter({ hasText: /^Closed the conversation with / }).waitFor();
});
