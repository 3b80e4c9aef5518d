// Known visitors (docs/widget.md#known-visitors): an admin turns the identity secret on in the site page;
// the host page passes its logged-in user with user_hash; the same user in another browser sees their
// history; a wrong hash stays apart; window.__porch.identify switches an open panel to the user; the
// agent sees the user as verified and the forger as unverified; an agent's image opens in every browser of
// the user (its request proves the user as hello does); a message left unsent at a logout waits for its user.
import { test } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { readFile } from "node:fs/promises";
import { fixture, hostPage, signIn, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
// The snippet's config object takes its `user` from the page's ?user= query (JSON), as a site's server
// would render it for the logged-in user.
const world = fixture({ site: "Acme", agent: AGENT }, async (w) => {
  const origin = new URL(w.host.url).origin;
  await w.host.close();
  const snippet = w.site.snippet.replace(/\}\);<\/script>$/,
    ',"user":JSON.parse(new URLSearchParams(location.search).get("user")||"null")});</script>');
  assert.notEqual(snippet, w.site.snippet, "the snippet ends as expected");
  w.host = await hostPage(origin, snippet);
});

const hash = (secret, id) => crypto.createHmac("sha256", secret).update(String(id)).digest("hex");
const withUser = (user) => `${world.host.url}?user=${encodeURIComponent(JSON.stringify(user))}`;
// Turns known visitors on from the site page (if a test before has not) and reads the secret shown.
const identitySecret = async (admin, site) => {
  await admin.goto(`${world.porch.url}/sites/${site.key}`);
  await admin.getByRole("link", { name: "Known visitors" }).click();
  const turnOn = admin.getByRole("button", { name: "Turn on" });
  if (await turnOn.count()) await turnOn.click();
  await admin.locator("#identity-secret").waitFor();
  const secret = await admin.locator("#identity-secret").inputValue();
  assert.match(secret, /^[0-9a-f]{64}$/);
  return secret;
};
// The agent, signed in in a context of their own, and the site's identity secret.
const agentWithSecret = async () => {
  const agentContext = await world.browser.newContext();
  const agent = await agentContext.newPage();
  agent.setDefaultTimeout(15000);
  await signIn(agent, world.porch, AGENT.email);
  return { agentContext, agent, secret: await identitySecret(agent, world.site) };
};
const shown = (page) => page.locator("[data-porch=message] .bubble").allInnerTexts();

test("a verified user finds their history in another browser; a forged hash and an anonymous chat stay apart",
  { timeout: 120000 }, async () => {
    const { porch, browser, site } = world;
    const agentContext = await browser.newContext();
    const admin = await agentContext.newPage();
    admin.setDefaultTimeout(15000);
    await signIn(admin, porch, AGENT.email);
    const secret = await identitySecret(admin, site);

    const ada = { id: 42, name: "Ada Lovelace", email: "ada@example.org", user_hash: hash(secret, 42) };
    const laptop = await visitor(browser, withUser(ada));
    await laptop.say("Where is my order?");

    const phone = await visitor(browser, withUser(ada));
    await waitFor("the user's history in the second browser", async () =>
      (await shown(phone.page)).includes("Where is my order?"));
    await phone.say("Sent from my phone");
    await waitFor("the phone's message live on the laptop", async () =>
      (await shown(laptop.page)).includes("Sent from my phone"));

    const mallory = await visitor(browser, withUser({ ...ada, name: "Mallory", user_hash: hash("guess", 42) }));
    await mallory.say("Let me in");
    assert.deepEqual(await shown(mallory.page), ["Let me in"], "no history for a forged hash");

    // An anonymous chat, then the page logs the user in without a reload.
    const later = await visitor(browser, world.host.url);
    await later.say("Anonymous question");
    await later.page.evaluate((u) => window.__porch.identify(u), ada);
    await waitFor("the user's history after identify", async () => {
      const texts = await shown(later.page);
      return texts.includes("Where is my order?") && texts.includes("Sent from my phone");
    });
    assert.ok(!(await shown(later.page)).includes("Anonymous question"), "the anonymous chat is not merged");

    await admin.goto(`${porch.url}/inbox`);
    await admin.locator("#conversations li", { hasText: "Sent from my phone" }).locator("a").click();
    await admin.waitForURL(/\/conversations\/\d+/);
    const verified = admin.locator("#conversation-aside [data-identity=verified]");
    assert.match(await verified.innerText(), /^42\s+verified$/);
    assert.equal(await admin.locator("h1").innerText(), "Ada Lovelace");

    await admin.goto(`${porch.url}/inbox`);
    await admin.locator("#conversations li", { hasText: "Let me in" }).locator("a").click();
    await admin.waitForURL(/\/conversations\/\d+/);
    const claim = admin.locator("#conversation-aside [data-identity=unverified]");
    assert.match(await claim.innerText(), /^42 \u00b7 Mallory \u00b7 ada@example\.org\s+unverified$/);
    for (const v of [laptop, phone, mallory, later]) await v.context.close();
    await agentContext.close();
  });

// A valid 1x1 PNG.
const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

test("an agent's image shows in every browser of a verified user", { timeout: 120000 }, async () => {
  const { porch, browser } = world;
  const { agentContext, agent, secret } = await agentWithSecret();
  const bea = { id: "bea-7", name: "Bea", user_hash: hash(secret, "bea-7") };
  const laptop = await visitor(browser, withUser(bea));
  await laptop.say("Can you show me where?");
  const phone = await visitor(browser, withUser(bea));

  await agent.goto(`${porch.url}/inbox`);
  await agent.locator("#conversations li", { hasText: "Can you show me where?" }).locator("a").click();
  await agent.waitForURL(/\/conversations\/\d+/);
  const [chooser] = await Promise.all([agent.waitForEvent("filechooser"),
    agent.getByText("Attach files", { exact: true }).click()]);
  await chooser.setFiles([{ name: "here.png", mimeType: "image/png", buffer: Buffer.from(PIXEL, "base64") }]);
  await agent.locator("#reply-files li", { hasText: "ready" }).waitFor();
  await agent.getByRole("button", { name: "Send reply" }).click();

  // The laptop's token did not upload it and the phone's neither: each loads it as the user.
  for (const [name, v] of [["laptop", laptop], ["phone", phone]]) {
    const image = v.page.locator("[data-porch=message][data-author=agent] [data-porch=file-image] img");
    await waitFor(`the agent's image to load on the ${name}`, () => image.evaluateAll(
      (imgs) => imgs.length === 1 && imgs[0].complete && imgs[0].naturalWidth === 1));
  }
  for (const v of [laptop, phone]) await v.context.close();
  await agentContext.close();
});

test("a verified user downloads and deletes their history from the menu of another browser", { timeout: 120000 },
  async () => {
    const { browser } = world;
    const { agentContext, secret } = await agentWithSecret();
    const cy = { id: "cy-3", name: "Cy", user_hash: hash(secret, "cy-3") };
    const laptop = await visitor(browser, withUser(cy));
    await laptop.say("Cy's question from the laptop");
    const phone = await visitor(browser, withUser(cy));
    const { page } = phone;
    await waitFor("the user's history on the phone", async () =>
      (await shown(page)).includes("Cy's question from the laptop"));

    await page.locator("[data-porch=data-button]").click();
    const [json] = await Promise.all([page.waitForEvent("download"), page.locator("[data-porch=download-json]").click()]);
    const doc = JSON.parse(await readFile(await json.path(), "utf8"));
    assert.equal(doc.visitor.user_id, "cy-3");
    assert.deepEqual(doc.conversations[0].messages.map((m) => m.body), ["Cy's question from the laptop"]);

    await page.locator("[data-porch=data-button]").click();
    await page.locator("[data-porch=erase]").click();
    await page.locator("[data-porch=erase-confirm]").click();
    await page.locator("[data-porch=error]", { hasText: "Your data was deleted." }).waitFor();
    for (const v of [phone, laptop]) {
      await waitFor("the history gone in both browsers", async () => (await shown(v.page)).length === 0);
    }
    // Still the user afterwards, with nothing stored: a new tab shows an empty history.
    const again = await visitor(browser, withUser(cy));
    await again.page.locator("[data-porch=status][data-state=connected]").waitFor();
    assert.deepEqual(await shown(again.page), []);
    for (const v of [laptop, phone, again]) await v.context.close();
    await agentContext.close();
  });

// A message a signed-in user wrote offline and had not sent when the page logged them out waits for that
// user: the browser's anonymous visitor neither shows nor sends it (the user's words would land in the chat
// of whoever uses the computer next, and twice if the first copy had arrived), and it goes out, once, into
// the user's conversation when they are back.
test("a signed-in user's unsent message waits for that user, not for the next person at the browser",
  { timeout: 120000 }, async () => {
    const { agentContext, secret } = await agentWithSecret();
    const dee = { id: "dee-9", name: "Dee", user_hash: hash(secret, "dee-9") };
    const v = await visitor(world.browser, withUser(dee));
    const status = v.page.locator("[data-porch=status]");
    const connected = async () => (await status.getAttribute("data-state")) === "connected";
    await v.context.setOffline(true);
    await waitFor("offline", async () => (await status.getAttribute("data-state")) === "offline");
    await v.page.locator("[data-porch=input]").fill("My card ends 4242");
    await v.page.locator("[data-porch=input]").press("Enter");
    await v.page.locator("[data-porch=message][data-status=sending]", { hasText: "My card ends 4242" }).waitFor();

    // Logged out without a reload, then back online: the panel is the browser's anonymous visitor.
    await v.page.evaluate(() => window.Porch.identify(null));
    await v.context.setOffline(false);
    await waitFor("connected as the anonymous visitor", connected);
    await v.say("Anonymous after logout");
    assert.deepEqual(await shown(v.page), ["Anonymous after logout"]);
    // A page without the user (the chat reopens by itself): the anonymous history from the server, still
    // without the user's message.
    await v.page.goto(world.host.url);
    await waitFor("the chat reopened", connected);
    await waitFor("the anonymous history", async () => (await shown(v.page)).includes("Anonymous after logout"));
    assert.deepEqual(await shown(v.page), ["Anonymous after logout"]);

    // The user signs in again: their message goes out now, once, into their own conversation.
    await v.page.evaluate((u) => window.Porch.identify(u), dee);
    await v.page.locator("[data-porch=message][data-status=sent]", { hasText: "My card ends 4242" }).waitFor();
    assert.deepEqual(await shown(v.page), ["My card ends 4242"]);
    const phone = await visitor(world.browser, withUser(dee));
    await waitFor("the user's history in another browser", async () =>
      (await shown(phone.page)).includes("My card ends 4242"));
    assert.deepEqual(await shown(phone.page), ["My card ends 4242"]);
    const left = await v.page.evaluate((k) => localStorage.getItem(k), `porch:${world.site.key}:pending`);
    assert.equal(left, null, "nothing waits any more");
    for (const x of [v, phone]) await x.context.close();
    await agentContext.close();
  });

test("a signed-in user's unsent text in the box is theirs: not shown to the next person, cleared at a logout",
  { timeout: 120000 }, async () => {
    const { agentContext, secret } = await agentWithSecret();
    const eve = { id: "eve-7", name: "Eve", user_hash: hash(secret, "eve-7") };
    const v = await visitor(world.browser, withUser(eve));
    const box = v.page.locator("[data-porch=input]");
    await box.fill("Eve private: my card is 4111");
    // The next person at the browser, on a page without the user: the box is empty.
    await v.page.goto(world.host.url);
    await waitFor("the chat reopened", async () =>
      (await v.page.locator("[data-porch=status]").getAttribute("data-state")) === "connected");
    assert.equal(await box.inputValue(), "");
    // Back as Eve: her text is back.
    await v.page.goto(withUser(eve));
    await waitFor("the draft back in the box", async () => (await box.count()) === 1
      && (await box.inputValue()) === "Eve private: my card is 4111");
    // A logout without a reload clears the box, and nothing is kept.
    await v.page.evaluate(() => window.Porch.identify(null));
    assert.equal(await box.inputValue(), "");
    const kept = await v.page.evaluate((k) => localStorage.getItem(k), `porch:${world.site.key}:draft`);
    assert.equal(kept, null);
    await v.context.close();
    await agentContext.close();
  });
