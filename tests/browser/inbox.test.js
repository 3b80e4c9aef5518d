// The admin inbox as people use it: a fresh install is set up with the token from the log, a
// site is created, a visitor on another origin chats, and the agent answers from the inbox,
// live. Also: visitor text stays text, CSRF and role checks, throttling, catching up.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  PASSWORD, fixture, hostPage, hostOrigin, setupToken, signIn, snap, visitor, waitFor,
} from "./harness.js";

const ADMIN = "ana@example.com";
const AGENT = "bo@example.com";
let admin, adminPage;
let afterHours; // the conversation the signed-out tests answer in
// No site yet: the first test creates it from the admin UI, and its host page.
const world = fixture({}, async ({ browser }) => {
  admin = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  adminPage = await admin.newPage();
  adminPage.setDefaultTimeout(15000);
});

/** Fails the test on any dialog or uncaught error in `page`. */
function guard(page) {
  const trouble = [];
  page.on("dialog", async (d) => { trouble.push(`dialog: ${d.message()}`); await d.dismiss(); });
  page.on("pageerror", (e) => trouble.push(`pageerror: ${e.message}`));
  return trouble;
}

test("fresh install → setup → sign in → site → a visitor chats and the agent answers live",
  { timeout: 120000 }, async () => {
    const { porch, browser } = world;
    const page = adminPage;
    const trouble = guard(page);

    // 1. A fresh install sends everyone to setup, which needs the token from the log.
    await page.goto(porch.url);
    assert.equal(new URL(page.url()).pathname, "/setup");
    await snap(page, "setup");
    await page.getByLabel("Setup token").fill("not-the-token-not-the-token");
    await page.getByLabel("Your name").fill("Ana");
    await page.getByLabel("Email").fill(ADMIN);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Create admin account" }).click();
    await page.getByText("That setup token is not right").waitFor();
    // The field at fault is marked, described by the reason and focused (docs/admin.md).
    const token = page.getByLabel("Setup token");
    assert.equal(await token.getAttribute("aria-invalid"), "true");
    assert.equal(await token.getAttribute("aria-describedby"), "form-error");
    await page.waitForFunction(() => document.activeElement?.id === "token");
    await page.getByLabel("Setup token").fill(await setupToken(porch));
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Create admin account" }).click();
    await page.waitForURL(/\/sites\/new/);

    // 2. Sign out and in again.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/login/);
    await snap(page, "login");
    await signIn(page, porch, ADMIN);
    assert.equal(new URL(page.url()).pathname, "/inbox");
    await snap(page, "inbox-empty");

    // 3. Create a site allowing the host page's origin; take its snippet.
    const origin = await hostOrigin();
    await page.goto(`${porch.url}/sites/new`);
    await page.getByLabel("Name", { exact: true }).fill("Acme Shop");
    await page.getByLabel("Allowed origins").fill(origin);
    await page.getByRole("button", { name: "Create site" }).click();
    await page.waitForURL(/\/sites\/s_/);
    const snippet = await page.locator("#snippet").inputValue();
    assert.match(snippet, /^<script>/);
    await snap(page, "site");
    world.host = await hostPage(origin, snippet);
    const { host } = world;

    // 4. The inbox is open; a visitor writes; the conversation appears without a reload.
    await page.goto(`${porch.url}/inbox`);
    const v = await visitor(browser, host.url);
    await v.say("Hello! Do you ship to Norway?");
    const item = page.locator("#conversations li", { hasText: "Do you ship to Norway?" });
    await item.waitFor();
    assert.equal(await item.getAttribute("class"), "conversation unread arrived");
    assert.match(await item.innerText(), /Acme Shop/);
    await snap(page, "inbox-live");

    // 5. The agent opens it and replies with Enter; the visitor sees the reply.
    await item.locator("a").click();
    await page.waitForURL(/\/conversations\/\d+/);
    await page.getByText("Hello! Do you ship to Norway?").waitFor();
    await page.getByLabel("Your reply").fill("Hi, this is Ana. Yes, we do!");
    await page.getByLabel("Your reply").press("Enter");
    await page.locator(".message-agent", { hasText: "Yes, we do!" }).waitFor();
    // The box keeps the text until the server's answer (the live stream may be quicker).
    await waitFor("the reply box to empty", async () => (await page.getByLabel("Your reply").inputValue()) === "");
    const theirs = v.page.locator("[data-porch=message][data-author=agent]");
    await theirs.first().waitFor();
    assert.equal(await theirs.locator(".bubble").innerText(), "Hi, this is Ana. Yes, we do!");
    // Replying took the unassigned conversation, as Assign to me would have.
    await page.getByText("Ana took this conversation").waitFor();
    await page.getByRole("button", { name: "Assign to me" }).waitFor({ state: "detached" });

    // 6. A private note is shown to agents only; the visitor's next message arrives live.
    await page.getByRole("radio", { name: "Private note" }).check();
    await page.getByLabel("Your private note").fill("Customer from the Oslo store");
    await page.getByRole("button", { name: "Add note" }).click();
    await page.getByRole("radio", { name: "Reply" }).check();
    await page.locator(".message-note", { hasText: "Oslo store" }).waitFor();
    await v.say("Great, thanks!");
    await page.locator(".message-visitor", { hasText: "Great, thanks!" }).waitFor();
    await snap(page, "conversation");
    await v.page.waitForTimeout(300);
    assert.equal(await v.page.getByText("Oslo store").count(), 0, "a private note reached the visitor");
    assert.deepEqual(trouble, []);
    await v.context.close();
  });

test("visitor text is shown as text in the inbox and runs nothing", { timeout: 60000 }, async () => {
  const { porch, browser, host } = world;
  const page = adminPage;
  const trouble = guard(page);
  await page.goto(`${porch.url}/inbox`);
  const v = await visitor(browser, host.url);
  const IMG = "<img src=x onerror=alert(1)>";
  const SCRIPT = "<script>alert(2)</script>";
  await v.say(IMG);
  await v.say(SCRIPT);
  const item = page.locator("#conversations li", { hasText: SCRIPT });
  await item.waitFor();
  assert.equal(await page.locator("#conversations img").count(), 0);
  await item.locator("a").click();
  await page.locator(".message-visitor .body", { hasText: IMG }).waitFor();
  assert.equal(await page.locator(".message-visitor .body").nth(1).innerText(), SCRIPT);
  assert.equal(await page.locator("#messages img, #messages script").count(), 0);
  await v.say("<b>still text</b>");
  await page.locator(".message-visitor .body", { hasText: "<b>still text</b>" }).waitFor();
  assert.equal(await page.locator("#messages b").count(), 0);
  // The visitor's name is isolated wherever it sits beside other text, so a right-to-left override
  // in it cannot flip what follows: a <bdi> in the heading and the list, U+2068 … U+2069 in the title.
  assert.equal(await page.locator(".page-head h1 bdi").count(), 1);
  assert.match(await page.title(), /^(\(\d+\) )?\u2068Visitor #\d+\u2069 · Porch$/);
  await page.goto(`${porch.url}/inbox`);
  assert.equal(await page.locator("#conversations li .visitor bdi").first().innerText().then((t) => /^Visitor #/.test(t)), true);
  assert.deepEqual(trouble, [], "a dialog opened or an error was thrown");
  await v.context.close();
});

test("a form post without a valid CSRF token is refused", { timeout: 30000 }, async () => {
  const { porch, host } = world;
  await adminPage.goto(`${porch.url}/sites`);
  const post = (body) => adminPage.evaluate(async (b) => {
    const res = await fetch("/sites", { method: "POST", body: new URLSearchParams(b), redirect: "manual" });
    return { status: res.status, text: await res.text() };
  }, body);
  const missing = await post({ name: "Evil", origins: "https://evil.example" });
  assert.equal(missing.status, 403);
  assert.match(missing.text, /Form expired/);
  const wrong = await post({ name: "Evil", origins: "https://evil.example", csrf: "forged" });
  assert.equal(wrong.status, 403);
  // A plain HTML form from another origin: no session cookie travels (SameSite=Lax), and no token.
  const page = await admin.newPage();
  await page.goto(host.url);
  // Wait for the post's own answer before closing: closing a page while a cross-origin navigation
  // commits can hang Chromium's close for good (crbug.com/536385539).
  const answer = page.waitForResponse((r) => r.url() === `${porch.url}/sites` && r.request().method() === "POST");
  await page.evaluate((url) => {
    const f = document.createElement("form");
    f.method = "post";
    f.action = `${url}/sites`;
    for (const [k, v] of Object.entries({ name: "Evil", origins: "https://evil.example" })) {
      const i = document.createElement("input");
      i.name = k; i.value = v; f.append(i);
    }
    document.body.append(f);
    f.submit();
  }, porch.url);
  assert.equal((await answer).status(), 403);
  await page.waitForURL(`${porch.url}/sites`);
  await page.close();
  await adminPage.goto(`${porch.url}/sites`);
  assert.equal(await adminPage.getByText("Evil").count(), 0, "a forged post created a site");
});

test("an invited agent can answer chats but cannot open admin pages", { timeout: 60000 }, async () => {
  const { porch, browser } = world;
  await adminPage.goto(`${porch.url}/team`);
  await adminPage.getByLabel("Name").fill("Bo");
  await adminPage.getByLabel("Email").fill(AGENT);
  await adminPage.getByRole("button", { name: "Create invitation link" }).click();
  const link = await adminPage.locator("#new-link").inputValue();
  assert.match(link, /\/invitations\//);
  await snap(adminPage, "team");
  // Until Bo takes the invitation up, the team page says he is only invited.
  const invited = adminPage.locator(".member", { hasText: AGENT });
  assert.match(await invited.innerText(), /Invited/);
  assert.doesNotMatch(await adminPage.locator(".member", { hasText: "(you)" }).innerText(), /Invited/);

  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(link);
  await page.getByLabel("New password").fill(PASSWORD);
  await page.getByRole("button", { name: "Create my account" }).click();
  // Choosing the password signs Bo in: the link proved his mailbox.
  await page.waitForURL(/\/inbox/);
  await adminPage.reload();
  assert.doesNotMatch(await invited.innerText(), /Invited/, "joined once the password is set");
  await signIn(page, porch, AGENT);
  assert.equal(new URL(page.url()).pathname, "/inbox");
  assert.equal(await page.getByRole("link", { name: "Sites" }).count(), 0);
  for (const url of ["/sites", "/sites/new", "/team"]) {
    const res = await page.goto(`${porch.url}${url}`);
    assert.equal(res.status(), 403, url);
    await page.getByText("Only admins can open this page").waitFor();
  }
  // The invitation works once.
  const again = await page.goto(link);
  assert.equal(again.status(), 410);

  // Disabling signs Bo out at once, so the admin is asked first; cancelling changes nothing.
  // A page of its own: the first test's guard dismisses any dialog of teamPage.
  const teamPage = await admin.newPage();
  teamPage.setDefaultTimeout(15000);
  await teamPage.goto(`${porch.url}/team`);
  const questions = [];
  let answer = false;
  const onDialog = async (d) => {
    questions.push(d.message());
    await (answer ? d.accept() : d.dismiss());
  };
  teamPage.on("dialog", onDialog);
  const bo = teamPage.locator("li.member", { hasText: AGENT });
  // Each row's buttons name the member, so a screen reader's list of buttons tells them apart.
  for (const name of ["Change role of Bo", "Reset link for Bo", "Disable Bo"]) {
    assert.equal(await teamPage.getByRole("button", { name, exact: true }).count(), 1, name);
  }
  await bo.getByRole("button", { name: "Disable" }).click();
  await waitFor("the question", async () => questions.length === 1);
  assert.match(questions[0], /^Disable Bo\? They are signed out at once/);
  assert.equal((await page.goto(`${porch.url}/inbox`)).status(), 200, "still signed in");
  answer = true;
  await bo.getByRole("button", { name: "Disable" }).click();
  await teamPage.waitForURL(/notice=disabled/);
  await page.goto(`${porch.url}/inbox`);
  assert.equal(new URL(page.url()).pathname, "/login", "signed out");
  // Enabling, and saving the two-factor setting unticked, ask nothing; requiring it does.
  await teamPage.locator("li.member", { hasText: AGENT }).getByRole("button", { name: "Enable" }).click();
  await teamPage.waitForURL(/notice=enabled/);
  await teamPage.locator("form[action='/team/two-factor']").getByRole("button", { name: "Save" }).click();
  await teamPage.waitForURL(/notice=/);
  assert.equal(questions.length, 2);
  answer = false;
  await teamPage.getByLabel("Require two-factor sign-in for the team").check();
  await teamPage.locator("form[action='/team/two-factor']").getByRole("button", { name: "Save" }).click();
  await waitFor("the question", async () => questions.length === 3);
  assert.match(questions[2], /^Require two-factor sign-in\? Everyone without it is signed out/);
  await teamPage.goto(`${porch.url}/team`);
  assert.equal(await teamPage.getByLabel("Require two-factor sign-in for the team").isChecked(), false);
  await teamPage.close();
  await context.close();
});

test("a wrong password is throttled after repeated tries", { timeout: 60000 }, async () => {
  const { porch, browser } = world;
  const context = await browser.newContext();
  const page = await context.newPage();
  for (let i = 0; i < 5; i++) {
    await page.goto(`${porch.url}/login`);
    await page.getByLabel("Email").fill(AGENT);
    await page.getByLabel("Password").fill(`wrong password ${i}`);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText("Wrong email or password.").waitFor();
  }
  await page.getByLabel("Password").fill(PASSWORD); // even the right one, for now
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText("Too many failed sign-ins").waitFor();
  await snap(page, "throttled");
  await context.close();
});

test("the inbox catches up on messages that arrived while its live connection was down",
  { timeout: 60000 }, async () => {
    const { porch, browser, host } = world;
    const page = adminPage;
    let blocked = true;
    await page.route("**/inbox/events**", (route) => (blocked ? route.abort() : route.continue()));
    await page.goto(`${porch.url}/inbox`);
    await page.locator("[data-live-status]").waitFor({ state: "visible" });
    const v = await visitor(browser, host.url);
    await v.say("Sent while the inbox was offline");
    await v.say("And another one");
    await page.waitForTimeout(1000);
    assert.equal(await page.getByText("And another one").count(), 0, "arrived although blocked");
    blocked = false;
    await page.locator("#conversations li", { hasText: "And another one" }).waitFor({ timeout: 20000 });
    await page.locator("[data-live-status]").waitFor({ state: "hidden" });
    await page.unroute("**/inbox/events**");

    // The same on a conversation page.
    await page.locator("#conversations li", { hasText: "And another one" }).locator("a").click();
    await page.waitForURL(/\/conversations\/\d+/);
    blocked = true;
    await page.route("**/events**", (route) => (blocked ? route.abort() : route.continue()));
    await page.reload();
    await v.say("Written during the outage");
    await page.waitForTimeout(500);
    assert.equal(await page.getByText("Written during the outage").count(), 0);
    blocked = false;
    await page.locator(".message-visitor", { hasText: "Written during the outage" }).waitFor({ timeout: 20000 });
    assert.equal(await page.locator(".message-visitor", { hasText: "Written during the outage" }).count(), 1);
    await v.context.close();
  });

// Issue #11, item 4: a write whose session has ended must keep the agent's text, say so, and
// insert nothing; after signing in again the same text goes out.
test("a reply or note written after the session ended is kept, explained, and sent after sign-in",
  { timeout: 120000 }, async () => {
    const { porch, browser, host } = world;
    const page = adminPage;
    const trouble = guard(page);
    const v = await visitor(browser, host.url);
    await v.say("Anyone there after hours?");
    await page.goto(`${porch.url}/inbox`);
    await page.locator("#conversations li", { hasText: "Anyone there after hours?" }).locator("a").click();
    await page.waitForURL(/\/conversations\/\d+/);
    const conversation = new URL(page.url()).pathname;
    afterHours = conversation;
    const box = page.locator("#reply-body"); // labelled after the mode: reply or private note
    const alert = page.locator(".reply-error");

    /** Signs Ana out in another tab of the same browser. */
    const signOutElsewhere = async () => {
      const other = await admin.newPage();
      await other.goto(`${porch.url}/account`);
      await other.getByRole("button", { name: "Sign out" }).click();
      await other.waitForURL(/\/login/);
      await other.close();
    };

    /** Writes `text` while signed out; checks it is kept and nothing foreign was inserted. */
    const refusedWhileSignedOut = async (text, press) => {
      await signOutElsewhere();
      const before = await page.locator("#messages").innerHTML();
      await box.fill(text);
      await press();
      await alert.getByText("Signed out: sign in again, your text is kept.").waitFor();
      assert.equal(await box.inputValue(), text, "the text left the box");
      assert.equal(await page.locator("#messages").innerHTML(), before, "something was inserted");
      assert.equal(await page.locator("input[type=password], #messages form").count(), 0,
        "the sign-in page was inserted");
      await snap(page, `signed-out-${press.name}`);
    };

    /** Follows the error's sign-in link and comes back to the conversation with the text. */
    const signInAgain = async (text) => {
      await alert.getByRole("link", { name: "Sign in" }).click();
      await page.waitForURL(/\/login/);
      await page.getByLabel("Email").fill(ADMIN);
      await page.getByLabel("Password").fill(PASSWORD);
      await Promise.all([page.waitForURL((u) => u.pathname === conversation),
        page.getByRole("button", { name: "Sign in" }).click()]);
      assert.equal(await box.inputValue(), text, "the text was not restored after sign-in");
    };

    const REPLY = "Yes! We answer until 22:00, even on Sundays.";
    await refusedWhileSignedOut(REPLY, async function reply() { await box.press("Enter"); });
    await signInAgain(REPLY);
    await box.press("Enter");
    await page.locator(".message-agent", { hasText: REPLY }).waitFor();
    // The live stream may show it before the answer that empties the box arrives.
    await waitFor("the box to empty", async () => (await box.inputValue()) === "");
    await v.page.locator("[data-porch=message][data-author=agent]", { hasText: REPLY }).waitFor();

    const NOTE = "Asked about opening hours; send them the holiday list.";
    await page.getByRole("radio", { name: "Private note" }).check();
    const addNote = () => page.getByRole("button", { name: "Add note" }).click();
    await refusedWhileSignedOut(NOTE, async function note() { await addNote(); });
    await signInAgain(NOTE);
    // The draft came back as what it was: a note (sent as a reply, it would reach the visitor).
    assert.equal(await page.getByRole("radio", { name: "Private note" }).isChecked(), true);
    await addNote();
    await page.locator(".message-note", { hasText: NOTE }).waitFor();
    await waitFor("the box to empty", async () => (await box.inputValue()) === "");
    await page.reload();
    assert.equal(await box.inputValue(), "", "a sent draft came back after a reload");
    assert.equal(await page.locator(".message-note", { hasText: NOTE }).count(), 1, "the note was not stored");
    assert.deepEqual(trouble, []);
    await v.context.close();
  });

test("a reply refused for a stale form, a server error or a lost connection keeps its text",
  { timeout: 60000 }, async () => {
    const { porch } = world;
    const page = adminPage;
    const trouble = guard(page);
    await signIn(page, porch, ADMIN); // whatever the test before left
    assert.ok(afterHours, "the test before made no conversation");
    await page.goto(`${porch.url}${afterHours}`);
    const box = page.getByLabel("Your reply");
    const alert = page.locator(".reply-error");
    const agentMessages = page.locator(".message-agent");
    const sent = await agentMessages.count();

    // Signed out and in again in another tab: this page's CSRF token belongs to the old session.
    const other = await admin.newPage();
    await other.goto(`${porch.url}/account`);
    await other.getByRole("button", { name: "Sign out" }).click();
    await other.waitForURL(/\/login/);
    await signIn(other, porch, ADMIN);
    await other.close();
    const STALE = "Written on a page from the old session";
    await box.fill(STALE);
    await box.press("Enter");
    await alert.getByText("This page is out of date").waitFor();
    assert.equal(await box.inputValue(), STALE);
    await alert.getByRole("link", { name: "Reload" }).click();
    await page.waitForLoadState("load");
    assert.equal(await box.inputValue(), STALE, "the reload lost the text");
    await box.press("Enter");
    await page.locator(".message-agent", { hasText: STALE }).waitFor();

    // A server error and a lost connection: the browser fakes them, nothing reaches the server.
    const reply = "**/conversations/*/reply";
    await page.route(reply, (route) => route.fulfill({ status: 503, contentType: "text/html",
      body: "<!doctype html><li id=message-999999 class=message>not ours</li>" }));
    await box.fill("Sent while the server is in trouble");
    await box.press("Enter");
    await alert.getByText("The server could not store it (503)").waitFor();
    assert.equal(await box.inputValue(), "Sent while the server is in trouble");
    await page.unroute(reply);
    await page.route(reply, (route) => route.abort());
    await box.press("Enter");
    await alert.getByText("No answer from the server").waitFor();
    assert.equal(await box.inputValue(), "Sent while the server is in trouble");
    await page.unroute(reply);
    assert.equal(await page.locator("#message-999999").count(), 0);
    assert.equal(await agentMessages.count(), sent + 1);
    await box.press("Enter");
    await page.locator(".message-agent", { hasText: "Sent while the server is in trouble" }).waitFor();
    await waitFor("the box to empty", async () => (await box.inputValue()) === "");
    assert.equal(await alert.innerText(), "", "the error stayed after a successful send");

    // The server stores the reply but its answer is lost: sent again, it is still stored once.
    const LOST = "Stored, but the answer was lost";
    await page.route(reply, async (route) => { await route.fetch(); await route.abort(); });
    await box.fill(LOST);
    await box.press("Enter");
    await alert.getByText("it will not be posted twice").waitFor();
    await page.unroute(reply);
    await box.press("Enter");
    await waitFor("the box to empty", async () => (await box.inputValue()) === "");
    await page.reload();
    assert.equal(await page.locator(".message-agent", { hasText: LOST }).count(), 1,
      "sent twice, stored once");
    assert.deepEqual(trouble, []);
  });
