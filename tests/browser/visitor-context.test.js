// What the widget tells about the visitor's browser reaches the agent: a visitor in Tokyo with a
// German browser, who came from a search page, chats; the agent (in another zone) sees their
// language, where they came from and their local time, ticking in the visitor's zone.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
const world = fixture({ site: "Acme", agent: AGENT });

/** HH:MM in `timeZone` at `at`, as an en-GB browser shows it. */
const clock = (timeZone, at) =>
  new Intl.DateTimeFormat("en-GB", { timeZone, timeStyle: "short" }).format(at);

test("the agent sees the visitor's language, referrer and local time from the widget's hello",
  { timeout: 90000 }, async () => {
    const { porch, host, browser } = world;
    const visitorContext = await browser.newContext({ locale: "de-DE", timezoneId: "Asia/Tokyo" });
    const visitor = await visitorContext.newPage();
    visitor.setDefaultTimeout(15000);
    await visitor.goto(host.url, { referer: "http://search.example/results?q=porch" });
    await visitor.locator("[data-porch=launcher]").click();
    await waitFor("the widget to connect", async () =>
      (await visitor.locator("[data-porch=status]").getAttribute("data-state")) === "connected");
    await visitor.locator("[data-porch=input]").fill("Guten Tag");
    await visitor.locator("[data-porch=input]").press("Enter");
    await visitor.locator("[data-porch=message][data-author=visitor][data-status=sent]").waitFor();

    const agentContext = await browser.newContext({ locale: "en-GB", timezoneId: "America/Sao_Paulo" });
    const agent = await agentContext.newPage();
    agent.setDefaultTimeout(15000);
    await signIn(agent, porch, AGENT.email);
    await agent.goto(`${porch.url}/inbox`);
    await agent.locator("#conversations li", { hasText: "Guten Tag" }).locator("a").click();
    await agent.waitForURL(/\/conversations\/\d+/);

    const details = agent.locator("#conversation-aside dl.details");
    const value = (label) => details.locator(`dt:text-is("${label}") + dd`);
    assert.equal(await value("Language").textContent(), "de-DE");
    assert.match(await value("Came from").textContent(), /^http:\/\/search\.example\//);
    const shown = await value("Local time").textContent();
    const now = Date.now();
    const expected = [now - 60000, now].map((at) => `${clock("Asia/Tokyo", at)} (Asia/Tokyo)`);
    assert.ok(expected.includes(shown), `${shown} is not one of ${expected.join(", ")}`);
    assert.notEqual(shown.slice(0, 5), clock("America/Sao_Paulo", now), "the visitor's zone, not the agent's");

    // A live change replaces the side panel: its clock shows the time at once (it showed only
    // "Asia/Tokyo" until the next 15 s tick).
    await agent.locator("body[data-needs]").waitFor({ state: "attached" });
    const other = await agentContext.newPage(); // the same agent in another tab takes it
    await other.goto(agent.url());
    await other.getByRole("button", { name: "Assign to me" }).click();
    await agent.locator("#conversation-aside", { hasText: "Assigned to" }).waitFor();
    const again = await value("Local time").textContent();
    assert.match(again, /^\d\d:\d\d \(Asia\/Tokyo\)$/, `after a live update: ${again}`);
    await visitorContext.close();
    await agentContext.close();
  });
