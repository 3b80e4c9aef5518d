// The inbox list with many chats: an agent with 230 open conversations sees the count, goes to
// page 2 and finds the one that waited longest, orders by waiting, and combines a site filter
// with "Unassigned". The 230 conversations are seeded into the database (with the sqlite3 tool)
// before the server starts: the widget's per-IP brake would rightly refuse 230 new chats from
// one test machine. Everything after that is the real server in a real browser.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fixture, hostOrigin, signIn, snap, visitor, hostPage } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
const HOUR = 3600 * 1000;
let beta, betaOrigin;

const world = fixture({ site: "Acme Shop", agent: AGENT, start: false }, async ({ porch }) => {
  betaOrigin = await hostOrigin();
  beta = await porch.addSite("Beta <i>Store</i>", betaOrigin);
  const now = Date.now();
  // 200 recent chats on Acme, answered a while ago; 30 older ones still waiting, the oldest
  // (conversation 1, "Longest waiter") since 5 hours ago. Every 10th is on Beta, every 4th is
  // assigned to Ana.
  const sql = ["BEGIN;"];
  for (let i = 1; i <= 230; i++) {
    const site = i % 10 === 0 ? `'${beta.key}'` : "(SELECT key FROM sites WHERE name = 'Acme Shop')";
    const at = i <= 30 ? now - 5 * HOUR + i * 60000 : now - HOUR + i * 1000;
    const waiting = i <= 30 ? at : "NULL";
    const assignee = i % 4 === 0 ? "(SELECT id FROM users WHERE email = 'ana@example.com')" : "NULL";
    const name = i === 1 ? "'Longest waiter'" : `'Visitor ${i}'`;
    sql.push(`INSERT INTO visitors (id, site_id, token_hash, name, first_seen_at, last_seen_at)
      SELECT ${i}, id, randomblob(32), ${name}, ${at}, ${at} FROM sites WHERE key = ${site};`);
    sql.push(`INSERT INTO conversations (id, site_id, visitor_id, assignee_id, created_at, last_message_at,
      waiting_since) SELECT ${i}, site_id, ${i}, ${assignee}, ${at}, ${at}, ${waiting} FROM visitors WHERE id = ${i};`);
    sql.push(`INSERT INTO messages (conversation_id, author, visitor_id, client_id, body, created_at)
      VALUES (${i}, 'visitor', ${i}, 'seed-${i}', 'Question ${i}', ${at});`);
  }
  sql.push("COMMIT;");
  execFileSync("sqlite3", ["-bail", path.join(porch.dataDir, "porch.db")], { input: sql.join("\n") });
  await porch.start();
});

test("230 open chats: the count, page 2 with the longest waiting, waiting order, site + unassigned",
  { timeout: 90000 }, async () => {
    const { porch, browser } = world;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    await signIn(page, porch, AGENT.email);
    await page.goto(`${porch.url}/inbox`);
    const rows = page.locator("#conversations > li");

    // Page 1: the count says there is more than the page shows.
    await page.getByText("230 open conversations, showing 1–200").waitFor();
    assert.equal(await rows.count(), 200);
    assert.equal(await page.getByText("Longest waiter").count(), 0, "the oldest is not on page 1");

    // Page 2 holds the other 30, the longest waiting among them (last: oldest activity).
    await page.getByRole("link", { name: "Next page →" }).click();
    await page.getByText("230 open conversations, showing 201–230").waitFor();
    assert.equal(await rows.count(), 30);
    assert.match(await rows.last().innerText(), /Longest waiter/);
    assert.equal(await page.getByRole("link", { name: "Next page →" }).count(), 0);
    await snap(page, "inbox-page-2");

    // Longest waiting first puts it at the top of page 1.
    await page.getByRole("link", { name: "← First page" }).click();
    await page.getByLabel("Order").selectOption("waiting");
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/sort=waiting/);
    assert.match(await rows.first().innerText(), /Longest waiter/);

    // A site filter combined with the Unassigned tab (which keeps the site and the order).
    await page.getByLabel("Site").selectOption({ label: "Beta <i>Store</i>" });
    await page.getByRole("button", { name: "Show" }).click();
    await page.getByText("23 open conversations on Beta <i>Store</i>, showing 1–23").waitFor();
    await page.getByRole("navigation", { name: "Filter conversations" }).getByRole("link", { name: "Unassigned" }).click();
    await page.waitForURL(/filter=unassigned/);
    // Every 10th is on Beta (23), and of those every 20th is assigned: 12 unassigned remain.
    await page.getByText("12 open conversations unassigned on Beta <i>Store</i>, showing 1–12").waitFor();
    assert.equal(await rows.count(), 12);
    for (const text of await rows.allInnerTexts()) assert.match(text, /Beta <i>Store<\/i>/);
    assert.equal(await page.locator("#conversations i").count(), 0, "a site name is text, not markup");
    assert.equal(await page.getByLabel("Site").inputValue(), beta.key);
    await snap(page, "inbox-filtered");
    await context.close();
  });

test("the live list honours the filters: a new chat on the chosen site appears, one elsewhere does not",
  { timeout: 60000 }, async () => {
    const { porch, browser, host } = world;
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    await signIn(page, porch, AGENT.email);
    await page.goto(`${porch.url}/inbox?filter=unassigned&site=${beta.key}`);
    const rows = page.locator("#conversations > li");
    await rows.first().waitFor();
    // The tabs count Beta's unread chats, as the list and its count line do; the title and the
    // navigation count every site's (all 230 are unread, unassigned or Ana's).
    const tabs = page.getByRole("navigation", { name: "Filter conversations" });
    const counted = async () => Object.fromEntries(await Promise.all(["open", "mine", "unassigned"].map(
      async (k) => [k, await tabs.locator(`[data-unread=${k}] [data-n]`).innerText()])));
    await page.waitForFunction(() => document.body.dataset.needs !== undefined);
    assert.deepEqual(await counted(), { open: "23", mine: "11", unassigned: "12" });
    assert.match(await page.title(), /^\(230\) /);

    const betaHost = await hostPage(betaOrigin, beta.snippet);
    try {
      const elsewhere = await visitor(browser, host.url);
      await elsewhere.say("Hello from Acme");
      const here = await visitor(browser, betaHost.url);
      await here.say("Hello from Beta");
      // Newest activity first: the new Beta chat goes to the top.
      await rows.first().filter({ hasText: "Hello from Beta" }).waitFor();
      assert.equal(await page.getByText("Hello from Acme").count(), 0);
      // The count line follows the list (a new user saw "0 open conversations" above a live row).
      const line = page.locator("[data-count]");
      await line.filter({ hasText: "13 open conversations unassigned on Beta <i>Store</i>, showing 1–13" })
        .waitFor();
      await page.waitForFunction(() => document.title.startsWith("(232) "));
      assert.deepEqual(await counted(), { open: "24", mine: "11", unassigned: "13" });
      // Closed from the list (e): the row goes, and so does its count.
      await rows.first().locator("a").first().focus();
      await page.keyboard.press("e");
      await line.filter({ hasText: "12 open conversations unassigned on Beta <i>Store</i>, showing 1–12" })
        .waitFor();
      assert.equal(await page.getByText("Hello from Beta").count(), 0);
      await elsewhere.context.close();
      await here.context.close();
    } finally {
      await betaHost.close();
    }
    await context.close();
  });
