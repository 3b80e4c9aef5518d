// Slack as an inbox, as an admin sets it up and an agent sees it: against `porch slack-mock` on
// loopback, the admin connects Slack on the site's Slack page and finds the three URLs the
// manifest needs; then a signed "Close conversation" shortcut from Slack closes the conversation
// that is open in the agent's browser, which shows it live as if closed there, and Slack's
// thread header is rewritten to say so.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { PORCH_BIN, fixture, freePort, signIn, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
const SECRET = "browser-signing-secret";

const mockPort = await freePort();
const mock = spawn(PORCH_BIN, ["slack-mock", "--listen", `127.0.0.1:${mockPort}`],
  { stdio: ["ignore", "pipe", "inherit"] });
await new Promise((resolve) => mock.stdout.once("data", resolve));
const mockUrl = `http://127.0.0.1:${mockPort}`;
after(() => mock.kill());

const world = fixture({ site: "Acme Shop", agent: AGENT, start: false }, async ({ porch }) => {
  await porch.start({ env: { PORCH_SLACK_API_URL: `${mockUrl}/api` } });
});

/** The mock's top-level posts in C1 (thread headers), newest first. */
async function headers() {
  const res = await fetch(`${mockUrl}/api/conversations.history?channel=C1&include_all_metadata=true`,
    { headers: { authorization: "Bearer xoxb-test" } });
  return (await res.json()).messages ?? [];
}

test("a shortcut in Slack closes the conversation an agent has open", { timeout: 90000 }, async () => {
  const { porch, browser, site, host } = world;
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, AGENT.email);

  await page.goto(`${porch.url}/sites/${site.key}/slack`);
  await page.getByLabel("Bot token").fill("xoxb-test");
  await page.getByLabel("Channel id").fill("C1");
  await page.getByLabel("Signing secret (Events API)").fill(SECRET);
  await page.getByRole("button", { name: "Connect Slack" }).click();
  const urls = {};
  for (const endpoint of ["events", "commands", "interactive"]) {
    const shown = page.locator("dd.mono", { hasText: `/${endpoint}` });
    urls[endpoint] = (await shown.textContent()).trim();
    assert.match(urls[endpoint], new RegExp(`^${porch.url}/integrations/slack/\\d+/${endpoint}$`));
  }

  const v = await visitor(browser, host.url);
  await v.say("Where is my order?");
  const header = await waitFor("the thread header", async () => (await headers())[0]);
  const conversation = header.metadata.event_payload.conversation_id;
  assert.match(header.text, /\*Conversation #\d+\* · Open · unassigned/);
  await page.goto(`${porch.url}/conversations/${conversation}`);
  await page.getByRole("button", { name: "Close conversation" }).waitFor();

  // Ana in Slack, with the email of her Porch account.
  await fetch(`${mockUrl}/mock/users`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ id: "U-ANA", name: "ana", email: AGENT.email }) });
  const payload = JSON.stringify({ type: "message_action", callback_id: "porch_close", trigger_id: "t1",
    team: { id: "T0MOCK" }, user: { id: "U-ANA" }, channel: { id: "C1" },
    message: { type: "message", ts: header.ts } });
  const body = `payload=${encodeURIComponent(payload)}`;
  const ts = Math.floor(Date.now() / 1000);
  const signature = "v0=" + createHmac("sha256", SECRET).update(`v0:${ts}:${body}`).digest("hex");
  const res = await fetch(urls.interactive, { method: "POST", body, headers: {
    "content-type": "application/x-www-form-urlencoded",
    "x-slack-request-timestamp": String(ts), "x-slack-signature": signature } });
  assert.equal(res.status, 200);

  // Live on the open page, as if closed in the inbox.
  await page.getByText("Ana closed this conversation").waitFor();
  await page.reload();
  await page.getByRole("button", { name: "Reopen conversation" }).waitFor();
  await waitFor("the header to show the state", async () =>
    (await headers()).find((h) => h.ts === header.ts && /\*Conversation #\d+\* · Closed/.test(h.text)));
  await context.close();
  await v.context.close();
});
