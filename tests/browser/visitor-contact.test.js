// An agent records who the visitor said they are: on the conversation page, "Edit name and
// email" saves both; the page says so, the conversation gets a status line, and a colleague's
// open inbox and conversation page show the new name and email live. A bad address is refused
// with the reason and changes nothing.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, visitor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
const world = fixture({ site: "Acme", agent: AGENT });

test("an agent sets the visitor's name and email and a colleague sees it live", { timeout: 90000 },
  async () => {
    const { porch, host, browser } = world;
    await porch.cli(["user", "add", "--email", "bo@example.com", "--name", "Bo", "--role", "agent",
      "--password-stdin"], { input: "correct horse battery staple\n" });
    const guest = await visitor(browser, host.url);
    await guest.say("Hi, I'm Jane from Acme, jane@acme.example");

    // A colleague, Bo, watches the inbox and the conversation.
    const desk = await browser.newContext();
    const colleague = await desk.newPage();
    colleague.setDefaultTimeout(15000);
    await signIn(colleague, porch, "bo@example.com");
    await colleague.goto(`${porch.url}/inbox`);
    await colleague.locator("#conversations li", { hasText: "Jane from Acme" }).locator("a").click();
    await colleague.waitForURL(/\/conversations\/\d+$/);
    await colleague.locator("body[data-needs]").waitFor({ state: "attached" });

    const context = await browser.newContext();
    const agent = await context.newPage();
    agent.setDefaultTimeout(15000);
    await signIn(agent, porch, AGENT.email);
    await agent.goto(colleague.url());

    // A bad address: refused with the reason, nothing stored.
    await agent.getByText("Edit name and email").click();
    await agent.getByLabel("Email").fill("jane@localhost");
    await agent.getByRole("button", { name: "Save" }).click();
    await agent.getByText("Please check the email address").waitFor();
    await agent.goBack();
    await agent.reload();

    await agent.getByText("Edit name and email").click();
    await agent.getByLabel("Name").fill("Jane Doe");
    await agent.getByLabel("Email").fill("jane@acme.example");
    // Meanwhile Bo takes the conversation: the agent's side panel is replaced live, and the
    // open form keeps what was typed.
    await agent.locator("body[data-needs]").waitFor({ state: "attached" });
    await colleague.getByRole("button", { name: "Assign to me" }).click();
    await agent.locator("#conversation-aside", { hasText: "Assigned to" }).waitFor();
    assert.equal(await agent.locator("#edit-visitor").getAttribute("open"), "");
    assert.equal(await agent.getByLabel("Name").inputValue(), "Jane Doe");
    await agent.getByRole("button", { name: "Save" }).click();
    await agent.getByText("The visitor's name and email are saved.").waitFor();
    await agent.getByText("Ana set the visitor's name to Jane Doe and set the visitor's email to jane@acme.example").waitFor();

    // The colleague's conversation page: the line, the heading, the tab title and the side
    // panel's email, live.
    await colleague.getByText("Ana set the visitor's name to Jane Doe").waitFor();
    await colleague.locator(".page-head h1", { hasText: "Jane Doe" }).waitFor();
    assert.match(await colleague.title(), /Jane Doe\u2069 · Porch$/);
    const email = colleague.locator("#conversation-aside dl.details dt:text-is('Email') + dd");
    await email.waitFor();
    assert.equal(await email.textContent(), "jane@acme.example");
    assert.equal(await colleague.locator("#visitor-name").inputValue(), "Jane Doe");
    // And the inbox list names the visitor.
    await colleague.goto(`${porch.url}/inbox`);
    await colleague.locator("#conversations li", { hasText: "Jane Doe" }).waitFor();

    await guest.context.close();
    await desk.close();
    await context.close();
  });
