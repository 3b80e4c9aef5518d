// What the visitor sees of the agents' side (docs/widget.md): a time on every message, "Seen" once an agent
// has opened the conversation after the visitor's message (an agent in a second browser context), the notice
// when an agent closes the conversation (the next message starts a new one), and the email prompt gone once
// an agent has replied live.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, visitor, waitFor } from "./harness.js";

const world = fixture({ site: "Acme Sees", agent: { email: "a@example.com", name: "Ana" }, email: true });

const metaOf = (page, author) => page.locator(`[data-porch=message][data-author=${author}] .meta`);

async function conversationOf(porch, key, index = 0) {
  const { body } = await porch.api("GET", "/conversations");
  return body.conversations.filter((c) => c.site === key).map((c) => c.id).sort((a, b) => a - b)[index];
}

test("every message has a short local time and its full date; the email prompt goes once an agent replies",
  { timeout: 90000 }, async () => {
    const { porch, site, host, browser } = world;
    // No agent has an admin page open, so the panel offers replies by email after the first message.
    const v = await visitor(browser, host.url);
    try {
      await v.say("When do you open?");
      const capture = v.page.locator("[data-porch=email]");
      await capture.waitFor({ state: "visible" });
      const mine = await metaOf(v.page, "visitor").first().evaluate((meta) => {
        const t = meta.querySelector("time");
        return { text: meta.textContent, time: t?.textContent, datetime: t?.getAttribute("datetime"),
          title: t?.title };
      });
      assert.match(mine.text, /^\d{1,2}:\d{2}(\s?[AP]M)? \u00b7 Sent$/, JSON.stringify(mine));
      assert.ok(Math.abs(Date.parse(mine.datetime) - Date.now()) < 60000, JSON.stringify(mine));
      // The full date, as the visitor's browser writes it: the year and the minutes are in it.
      const minutes = `:${String(new Date(mine.datetime).getMinutes()).padStart(2, "0")}`;
      assert.ok(mine.title.includes(String(new Date().getFullYear())) && mine.title.includes(minutes),
        JSON.stringify(mine));

      const conv = await conversationOf(porch, site.key);
      const reply = await porch.api("POST", `/conversations/${conv}/messages`, { body: "At nine." });
      assert.equal(reply.status, 201, JSON.stringify(reply.body));
      await v.page.locator("[data-porch=message][data-author=agent]").waitFor();
      const theirs = await metaOf(v.page, "agent").first().evaluate((meta) =>
        ({ text: meta.textContent, datetime: meta.querySelector("time")?.getAttribute("datetime") }));
      assert.match(theirs.text, /^\d{1,2}:\d{2}(\s?[AP]M)?$/, JSON.stringify(theirs));
      assert.ok(Math.abs(Date.parse(theirs.datetime) - Date.now()) < 60000, JSON.stringify(theirs));

      // The agent answered live: no prompt, not even after the next message.
      await capture.waitFor({ state: "hidden" });
      await v.say("Thanks!");
      await v.page.waitForTimeout(300);
      assert.equal(await capture.isVisible(), false, "the email prompt came back");
    } finally {
      await v.context.close();
    }
  });

test("Seen appears once an agent opens the conversation, and follows the visitor's newest message",
  { timeout: 90000 }, async () => {
    const { porch, site, host, browser } = world;
    const v = await visitor(browser, host.url);
    const agentContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      await v.say("Is my order on its way?");
      const own = v.page.locator("[data-porch=message][data-author=visitor]");
      await v.page.waitForTimeout(500);
      assert.equal(await own.last().getAttribute("data-status"), "sent", "Seen before any agent looked");

      const agent = await agentContext.newPage();
      agent.setDefaultTimeout(15000);
      await signIn(agent, porch, "a@example.com");
      const conv = await conversationOf(porch, site.key, 1);
      await agent.goto(`${porch.url}/conversations/${conv}`);
      await agent.getByText("Is my order on its way?").waitFor();

      await v.page.locator("[data-porch=message][data-author=visitor][data-status=seen]").waitFor();
      assert.match(await metaOf(v.page, "visitor").last().textContent(), / \u00b7 Seen$/);

      // The agent still has the page open: the next message is seen at once, and "Seen" moves to it.
      await v.say("It is order 1234.");
      await waitFor("Seen under the newest message", async () =>
        (await own.last().getAttribute("data-status")) === "seen");
      assert.deepEqual(await own.evaluateAll((els) => els.map((e) => e.dataset.status)), ["sent", "seen"]);

      // The agent's tab goes to the background: what arrives then is not seen until it is shown.
      await agent.evaluate(() => {
        window.__hidden = true;
        Object.defineProperty(document, "visibilityState", { configurable: true,
          get: () => (window.__hidden ? "hidden" : "visible") });
        document.dispatchEvent(new Event("visibilitychange"));
      });
      await v.say("Hello? Anyone?");
      await agent.getByText("Hello? Anyone?").waitFor(); // it did arrive on the page
      await v.page.waitForTimeout(1000);
      assert.equal(await own.last().getAttribute("data-status"), "sent", "Seen from a background tab");
      await agent.evaluate(() => {
        window.__hidden = false;
        document.dispatchEvent(new Event("visibilitychange"));
      });
      await waitFor("Seen once the tab is shown", async () =>
        (await own.last().getAttribute("data-status")) === "seen");

      // After a reload (resume) the widget still shows it.
      await v.page.reload();
      await v.page.locator("[data-porch=message][data-author=visitor][data-status=seen]").waitFor();
      assert.equal(await v.page.locator("[data-porch=message][data-author=visitor][data-status=seen] .bubble")
        .textContent(), "Hello? Anyone?");
    } finally {
      await agentContext.close();
      await v.context.close();
    }
  });

test("an agent closing the conversation shows a notice; the visitor's next message starts a new one",
  { timeout: 90000 }, async () => {
    const { porch, site, host, browser } = world;
    const v = await visitor(browser, host.url);
    const agentContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      await v.say("Please cancel my order.");
      const conv = await conversationOf(porch, site.key, 2);
      const agent = await agentContext.newPage();
      agent.setDefaultTimeout(15000);
      await signIn(agent, porch, "a@example.com");
      await agent.goto(`${porch.url}/conversations/${conv}`);
      await agent.getByRole("button", { name: "Close conversation" }).click();
      await agent.getByRole("button", { name: "Reopen conversation" }).waitFor();

      const notice = v.page.locator("[data-porch=closed]");
      await notice.waitFor();
      assert.equal(await notice.textContent(), "This conversation was closed. Write again any time to start a new one.");
      assert.equal(await notice.getAttribute("role"), "status");
      // It sits after the messages of the closed conversation.
      const order = await v.page.locator("[data-porch=messages] > *").evaluateAll((els) =>
        els.map((e) => e.dataset.porch));
      assert.deepEqual(order, ["greeting", "message", "closed"]);

      // A reload (resume) shows it again, after the closed conversation's messages.
      await v.page.reload();
      await notice.waitFor();
      const again = await v.page.locator("[data-porch=messages] > *").evaluateAll((els) =>
        els.map((e) => e.dataset.porch));
      assert.deepEqual(again, ["greeting", "message", "closed"]);

      // The agent reopens it and closes it again: the visitor sees both, in order.
      await agent.getByRole("button", { name: "Reopen conversation" }).click();
      const reopened = v.page.locator("[data-porch=reopened]");
      await reopened.waitFor();
      assert.equal(await reopened.textContent(), "This conversation was reopened.");
      await agent.getByRole("button", { name: "Close conversation" }).click();
      await waitFor("the second closed notice", async () => (await notice.count()) === 2);
      const reclosed = await v.page.locator("[data-porch=messages] > *").evaluateAll((els) =>
        els.map((e) => e.dataset.porch));
      assert.deepEqual(reclosed, ["greeting", "message", "closed", "reopened", "closed"]);

      await v.say("Actually, one more thing.");
      assert.equal(await notice.count(), 2);
      const after = await v.page.locator("[data-porch=messages] > *").evaluateAll((els) =>
        els.map((e) => e.dataset.porch));
      assert.deepEqual(after, ["greeting", "message", "closed", "reopened", "closed", "message"]);
      const conversations = await waitFor("a new conversation", async () => {
        const { body } = await porch.api("GET", "/conversations");
        const ids = body.conversations.filter((c) => c.site === site.key).map((c) => c.id);
        return ids.length === 4 && ids;
      });
      assert.ok(Math.max(...conversations) > conv, JSON.stringify(conversations));
    } finally {
      await agentContext.close();
      await v.context.close();
    }
  });

test("a page whose arrays serialize as strings (Prototype.js 1.6's toJSON) still sends and keeps its queue",
  { timeout: 60000 }, async () => {
    const { host, browser } = world;
    const context = await browser.newContext();
    await context.addInitScript(() => {
      Array.prototype.toJSON = function toJSON() { return `[${this.map((x) => JSON.stringify(x)).join(", ")}]`; };
    });
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    try {
      await page.goto(host.url);
      await page.locator("[data-porch=launcher]").click();
      await page.locator("[data-porch=status][data-state=connected]").waitFor();
      for (const text of ["Hello from an old page", "And again"]) {
        await page.locator("[data-porch=input]").fill(text);
        await page.locator("[data-porch=input]").press("Enter");
      }
      await waitFor("both acknowledged", async () =>
        (await page.locator("[data-porch=message][data-author=visitor][data-status=sent]").count()) === 2);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

test("the first reply arrives in view after a long first message and the email offer below it",
  { timeout: 60000 }, async () => {
    const { porch, site, host, browser } = world;
    const v = await visitor(browser, host.url);
    try {
      // Longer than the message list, so the list is scrolled to its end; then the email offer
      // appears under it (nobody is online) and makes the list shorter.
      await v.say(Array.from({ length: 40 }, (_, i) => `line ${i + 1} of my question`).join("\n"));
      await v.page.locator("[data-porch=email]").waitFor({ state: "visible" });
      const { body } = await porch.api("GET", "/conversations");
      const conv = Math.max(...body.conversations.filter((c) => c.site === site.key).map((c) => c.id));
      const reply = await porch.api("POST", `/conversations/${conv}/messages`, { body: "Here is your answer." });
      assert.equal(reply.status, 201, JSON.stringify(reply.body));
      const theirs = v.page.locator("[data-porch=message][data-author=agent]", { hasText: "Here is your answer." });
      await theirs.waitFor();
      await waitFor("the reply in view", async () => theirs.evaluate((el) => {
        const list = el.closest("[data-porch=messages]").getBoundingClientRect();
        const box = el.getBoundingClientRect();
        return box.top >= list.top && box.bottom <= list.bottom + 1;
      }));
    } finally {
      await v.context.close();
    }
  });
