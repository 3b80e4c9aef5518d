// Never miss a chat: on any admin page, a visitor's message updates the tab title, the favicon,
// the navigation's count and the inbox tabs, live; with sound and desktop alerts switched on, a
// beep and a desktop notification (window.Notification is replaced by a recorder, the permission
// granted in the context) that opens the conversation on click; none while the agent looks at
// that conversation; a colleague taking your conversation or assigning you one alerts you too.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
const world = fixture({ site: "Acme Shop", agent: AGENT });

/** Records notifications and beeps instead of showing and playing them. */
function recorders() {
  window.__notes = [];
  window.__beeps = 0;
  window.Notification = class {
    static permission = "granted";
    static requestPermission() { return Promise.resolve("granted"); }
    constructor(title, options = {}) {
      Object.assign(this, { title, body: options.body, tag: options.tag });
      window.__notes.push(this);
    }
    close() {}
  };
  window.AudioContext = class {
    constructor() { this.currentTime = 0; this.destination = {}; }
    createOscillator() {
      return { frequency: {}, connect: (next) => next, start: () => { window.__beeps += 1; }, stop() {} };
    }
    createGain() {
      return { gain: { setValueAtTime() {}, exponentialRampToValueAtTime() {} }, connect: (next) => next };
    }
    resume() { return Promise.resolve(); }
  };
}

const countOf = (page, which) => page.locator(`[data-unread="${which}"]`);
/** The count shown (0 when hidden); a shown count must also be visible on the page. */
const shown = async (page, which) => {
  const el = countOf(page, which);
  const n = await el.evaluate((e) => (e.hidden ? 0 : Number(e.querySelector("[data-n]").textContent)));
  if (n > 0) assert.equal(await el.isVisible(), true, `the ${which} count is not visible`);
  return n;
};

test("counts, favicon, sound and desktop notifications follow visitors on every admin page",
  { timeout: 120000 }, async () => {
    const { porch, browser, host } = world;
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.grantPermissions(["notifications"], { origin: porch.url });
    await context.addInitScript(recorders);
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    await signIn(page, porch, AGENT.email);

    // On a page that is not the inbox, the agent switches both alerts on.
    await page.goto(`${porch.url}/team`);
    await page.locator("body[data-needs]").waitFor({ state: "attached" });
    await page.getByRole("button", { name: "Sound" }).click();
    await page.getByRole("button", { name: "Desktop alerts" }).click();
    assert.equal(await page.getByRole("button", { name: "Sound" }).getAttribute("aria-pressed"), "true");
    assert.equal(await page.getByRole("button", { name: "Desktop alerts" }).getAttribute("aria-pressed"), "true");
    const beepsBefore = await page.evaluate(() => window.__beeps);
    assert.equal(await page.title(), "Team · Porch");
    assert.equal(await shown(page, "needs"), 0);

    // A visitor writes: the team page's title, favicon and navigation count follow, live.
    const first = await visitor(browser, host.url);
    await first.say("Hello, anyone there?");
    await waitFor("the title count", async () => (await page.title()) === "(1) Team · Porch");
    assert.equal(await shown(page, "needs"), 1);
    assert.match(await page.locator('link[rel="icon"]').getAttribute("href"), /^data:image\/svg\+xml,/);
    const note = await waitFor("a notification", () => page.evaluate(() => window.__notes[0]));
    assert.equal(note.title, "New conversation");
    assert.equal(note.body, "Hello, anyone there?");
    assert.equal(await page.evaluate(() => window.__beeps), beepsBefore + 1);

    // The inbox's tabs count it as open and unassigned, not mine.
    await page.goto(`${porch.url}/inbox`);
    await waitFor("the tab counts", async () => (await shown(page, "unassigned")) === 1);
    assert.equal(await shown(page, "open"), 1);
    assert.equal(await shown(page, "mine"), 0);
    assert.equal(await page.title(), "(1) Inbox · Porch");

    // A second message in the same conversation is "New message"; clicking the notification
    // opens the conversation, which reads it: every count drops.
    await first.say("Second question");
    const second = await waitFor("a second notification", () =>
      page.evaluate(() => window.__notes.find((n) => n.body === "Second question")));
    assert.equal(second.title, "New message");
    await Promise.all([page.waitForURL(/\/conversations\/\d+$/),
      page.evaluate(() => window.__notes.find((n) => n.body === "Second question").onclick())]);
    const conversationUrl = page.url();
    await waitFor("the count to clear", async () => !(await page.title()).startsWith("("));
    assert.equal(await shown(page, "needs"), 0);
    assert.equal(await page.locator('link[rel="icon"]').getAttribute("href"), "/assets/favicon.svg");

    // While the agent looks at it, a new message there alerts nobody.
    await first.say("Are you reading this?");
    await page.locator(".message-visitor", { hasText: "Are you reading this?" }).waitFor();
    await page.waitForTimeout(500);
    assert.equal(await page.evaluate(() => window.__notes.length), 0);

    // Another visitor writes while the agent is on that conversation page: its navigation
    // count and title follow, and the notification names the new conversation.
    const other = await visitor(browser, host.url);
    await other.say("I have a question about my order");
    await waitFor("the nav count on a conversation page", async () => (await shown(page, "needs")) === 1);
    assert.match(await page.title(), /^\(1\) /);
    const third = await waitFor("a notification for the other chat", () =>
      page.evaluate(() => window.__notes.find((n) => n.body === "I have a question about my order")));
    assert.equal(third.title, "New conversation");
    assert.notEqual(third.tag, `porch-conversation-${conversationUrl.split("/").pop()}`);

    // Closed, it needs nobody: the count is gone everywhere.
    await page.goto(`${porch.url}/inbox`);
    await waitFor("the inbox count", async () => (await shown(page, "unassigned")) === 1);
    await page.locator("#conversations li", { hasText: "I have a question" }).locator("a").click();
    await page.waitForURL(/\/conversations\/\d+$/);
    await page.getByRole("button", { name: "Close conversation" }).click();
    await page.getByText("closed this conversation").waitFor();
    await page.goto(`${porch.url}/inbox`);
    await waitFor("no counts", async () => (await shown(page, "open")) === 0);
    assert.equal(await page.title(), "Inbox · Porch");

    // Switched off, nothing beeps or pops up.
    await page.getByRole("button", { name: "Sound" }).click();
    await page.getByRole("button", { name: "Desktop alerts" }).click();
    assert.equal(await page.getByRole("button", { name: "Sound" }).getAttribute("aria-pressed"), "false");
    const beeps = await page.evaluate(() => window.__beeps);
    await first.say("One more");
    await waitFor("the count", async () => (await shown(page, "needs")) === 1);
    await page.waitForTimeout(300);
    assert.equal(await page.evaluate(() => window.__beeps), beeps);
    assert.equal(await page.evaluate(() => window.__notes.length), 0);

    await first.context.close();
    await other.context.close();
    await context.close();
  });

test("another agent's conversation counts on the Open tab only", { timeout: 90000 }, async () => {
  const { porch, browser, host } = world;
  await porch.cli(["user", "add", "--email", "bo@example.com", "--name", "Bo", "--role", "agent",
    "--password-stdin"], { input: "correct horse battery staple\n" });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, AGENT.email);
  const v = await visitor(browser, host.url);
  await v.say("Who will answer me?");
  // Bo takes it (through the form, as Bo would).
  const bo = await browser.newContext();
  const boPage = await bo.newPage();
  await signIn(boPage, porch, "bo@example.com");
  await boPage.goto(`${porch.url}/inbox`);
  await boPage.locator("#conversations li", { hasText: "Who will answer me?" }).locator("a").click();
  await boPage.getByRole("button", { name: "Assign to me" }).click();
  await boPage.getByText("Bo took this conversation").waitFor();

  await page.goto(`${porch.url}/inbox`);
  await v.say("Still there?");
  // Bo's chat is unread for Ana too, but it is neither hers nor unassigned.
  await waitFor("the counts", async () => (await shown(page, "open")) >= 1);
  const [open, mine, unassigned] = [await shown(page, "open"), await shown(page, "mine"),
    await shown(page, "unassigned")];
  assert.equal(open, mine + unassigned + 1, JSON.stringify({ open, mine, unassigned }));
  assert.equal(await shown(page, "needs"), mine + unassigned);
  await v.context.close();
  await bo.close();
  await context.close();
});

test("a conversation read in another tab loses its unread mark in the open list at once", { timeout: 90000 },
  async () => {
    const { porch, browser, host } = world;
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const list = await context.newPage();
    list.setDefaultTimeout(15000);
    await signIn(list, porch, AGENT.email);
    await list.goto(`${porch.url}/inbox`);
    const v = await visitor(browser, host.url);
    await v.say("Read me in the other tab");
    const first = list.locator("#conversations li", { hasText: "Read me in the other tab" });
    await waitFor("the unread row", async () => (await first.getAttribute("class"))?.includes("unread"));
    const id = await first.getAttribute("data-id");
    const row = list.locator(`#conversation-${id}`); // its preview changes with the next message
    const other = await context.newPage();
    await other.goto(`${porch.url}/conversations/${id}`);
    await other.getByText("Read me in the other tab").waitFor();
    await waitFor("the row's unread mark to go", async () =>
      !(await row.getAttribute("class")).includes("unread") && (await row.locator(".dot").count()) === 0);
    assert.doesNotMatch(await row.innerText(), /Unread:/);
    // Once the other tab is gone, the visitor's next message makes it unread again.
    await other.close();
    await v.say("And once more");
    await waitFor("the row unread again", async () => (await row.getAttribute("class"))?.includes("unread"));
    await v.context.close();
    await context.close();
  });

test("a page whose session ended says so, once, and stops its counts", { timeout: 90000 }, async () => {
  const { porch, browser } = world;
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const team = await context.newPage();
  team.setDefaultTimeout(15000);
  await signIn(team, porch, AGENT.email);
  await team.goto(`${porch.url}/team`);
  await team.locator("body[data-needs]").waitFor({ state: "attached" });
  const inbox = await context.newPage();
  inbox.setDefaultTimeout(15000);
  await inbox.goto(`${porch.url}/inbox`);
  await inbox.locator("#conversations[data-state=live]").waitFor({ state: "attached" });
  const streams = [];
  for (const page of [team, inbox]) {
    page.on("request", (r) => { if (r.url().includes("/events") || r.url().includes("/inbox/counts")) streams.push(r.url()); });
  }

  // Signed out in a third tab: both pages say so instead of "Reconnecting…" and live counts.
  const other = await context.newPage();
  await other.goto(`${porch.url}/account`);
  await other.getByRole("button", { name: "Sign out" }).click();
  await other.waitForURL(/\/login/);
  for (const page of [team, inbox]) {
    const note = page.locator("[data-signed-out]");
    await note.waitFor();
    assert.match(await note.innerText(), /^Signed out: this page is no longer live\. Sign in$/);
    assert.match(await note.getByRole("link", { name: "Sign in" }).getAttribute("href"), /^\/login\?next=%2F/);
    assert.doesNotMatch(await page.title(), /^\(\d+\)/);
    assert.equal(await page.locator("[data-live-status]:visible").count(), 0);
  }
  // And they stop asking.
  const asked = streams.length;
  await team.waitForTimeout(4000);
  assert.ok(streams.length <= asked, `reconnected ${streams.length - asked} times after signing out`);
  await context.close();
});

test("a colleague taking your conversation or assigning you one alerts you, your own changes do not",
  { timeout: 90000 }, async () => {
    const { porch, browser, host } = world;
    await porch.cli(["user", "add", "--email", "cy@example.com", "--name", "Cy", "--role", "agent",
      "--password-stdin"], { input: "correct horse battery staple\n" });
    // Ana's desk: alerts on, waiting on the team page.
    const desk = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await desk.grantPermissions(["notifications"], { origin: porch.url });
    await desk.addInitScript(recorders);
    const ana = await desk.newPage();
    ana.setDefaultTimeout(15000);
    await signIn(ana, porch, AGENT.email);
    await ana.goto(`${porch.url}/team`);
    await ana.locator("body[data-needs]").waitFor({ state: "attached" });
    await ana.getByRole("button", { name: "Desktop alerts" }).click();
    await ana.getByRole("button", { name: "Sound" }).click();
    const notes = () => ana.evaluate(() => window.__notes.map((n) => ({ ...n })));
    const v = await visitor(browser, host.url);
    await v.say("Can someone help with a refund?");
    await waitFor("the new conversation's notification", async () => (await notes()).length === 1);
    const beeps = await ana.evaluate(() => window.__beeps);

    // On her phone (another browser), Ana takes the conversation herself: no alert for that.
    const phone = await browser.newContext();
    const anaPhone = await phone.newPage();
    anaPhone.setDefaultTimeout(15000);
    await signIn(anaPhone, porch, AGENT.email);
    await anaPhone.goto(`${porch.url}/inbox`);
    await anaPhone.locator("#conversations li", { hasText: "help with a refund" }).locator("a").click();
    await anaPhone.waitForURL(/\/conversations\/\d+$/);
    const id = anaPhone.url().split("/").pop();
    await anaPhone.getByRole("button", { name: "Assign to me" }).click();
    await anaPhone.getByText("Ana took this conversation").waitFor();

    // Cy takes it over with the page's button: Ana's desk hears of that (and of nothing before).
    const cy = await browser.newContext();
    const cyPage = await cy.newPage();
    cyPage.setDefaultTimeout(15000);
    await signIn(cyPage, porch, "cy@example.com");
    await cyPage.goto(`${porch.url}/conversations/${id}`);
    await cyPage.getByRole("button", { name: "Take over from Ana" }).click();
    await cyPage.getByText("Cy took this conversation").waitFor();
    await waitFor("a notification of the take-over", async () => (await notes()).length === 2);
    const [, taken] = await notes();
    assert.equal(taken.title, "No longer yours", "her own assignment alerted nothing before it");
    assert.match(taken.body, /: Cy took this conversation$/);
    assert.equal(taken.tag, `porch-conversation-${id}`);
    assert.equal(await ana.evaluate(() => window.__beeps), beeps + 1);

    // Cy gives it back with the Assignee picker: Ana hears of that too, and a click opens it.
    await cyPage.getByLabel("Assignee").selectOption({ label: "Ana" });
    await cyPage.getByRole("button", { name: "Assign", exact: true }).click();
    await cyPage.getByText("Cy assigned this conversation to Ana").waitFor();
    await waitFor("a notification of the assignment", async () => (await notes()).length === 3);
    const given = (await notes())[2];
    assert.equal(given.title, "Assigned to you");
    assert.match(given.body, /: Cy assigned this conversation to Ana$/);
    await Promise.all([ana.waitForURL(new RegExp(`/conversations/${id}$`)),
      ana.evaluate(() => window.__notes[2].onclick())]);

    await v.context.close();
    await Promise.all([phone.close(), cy.close(), desk.close()]);
  });

test("switching an alert in one tab shows in this browser's other tabs", { timeout: 60000 }, async () => {
  const { porch, browser } = world;
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.grantPermissions(["notifications"], { origin: porch.url });
  await context.addInitScript(recorders);
  const first = await context.newPage();
  await signIn(first, porch, AGENT.email);
  await first.goto(`${porch.url}/inbox`);
  const second = await context.newPage();
  await second.goto(`${porch.url}/team`);
  const pressed = (page, name) => page.getByRole("button", { name }).getAttribute("aria-pressed");
  for (const name of ["Sound", "Desktop alerts"]) {
    assert.equal(await pressed(second, name), "false", name);
    await first.getByRole("button", { name }).click();
    assert.equal(await pressed(first, name), "true", name);
    await waitFor(`${name} on in the other tab`, async () => (await pressed(second, name)) === "true");
    await second.getByRole("button", { name }).click();
    await waitFor(`${name} off in the first tab`, async () => (await pressed(first, name)) === "false");
  }
  await context.close();
});
