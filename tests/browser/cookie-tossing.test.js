// Cookie tossing over plain http (docs/admin.md, "Cookie tossing"): a page on another port of the same
// host plants a session cookie for one of Porch's paths. The name then arrives twice on that page, and
// neither copy is trusted; the way to the sign-in page deletes the planted copy, so the agent, still
// signed in with their own cookie, comes back to the page instead of going round between the two
// ("too many redirects", as it did before 2026-12-06).
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, hostOrigin, hostPage, signIn } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
const world = fixture({ agent: AGENT });

test("a session cookie planted for the inbox's path does not lock the agent out of it", { timeout: 60000 },
  async () => {
    const { porch, browser } = world;
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    await signIn(page, porch, AGENT.email);

    const sibling = await hostPage(await hostOrigin(),
      '<script>document.cookie = "porch_session=planted; path=/inbox";</script>');
    try {
      await page.goto(sibling.url);
      const planted = (await context.cookies(`${porch.url}/inbox`)).filter((c) => c.name === "porch_session");
      assert.deepEqual(planted.map((c) => c.path).sort(), ["/", "/inbox"], "two session cookies for /inbox");

      const answer = await page.goto(`${porch.url}/inbox`);
      assert.equal(answer.status(), 200);
      assert.equal(new URL(page.url()).pathname, "/inbox");
      await page.locator("#conversations").waitFor({ state: "attached" });
      const left = (await context.cookies(`${porch.url}/inbox`)).filter((c) => c.name === "porch_session");
      assert.deepEqual(left.map((c) => c.path), ["/"], "the planted copy is gone, the agent's own kept");
    } finally {
      await sibling.close();
      await context.close();
    }
  });
