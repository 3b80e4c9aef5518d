// A refused admin form marks the field its error is about: aria-invalid, described by the error
// (and still by its hint), with the focus in it, as the site delete page's wrong name always did;
// an error about no one field keeps the focus on the notice. And no admin page scrolls sideways
// at 320 px (WCAG 1.4.10 reflow), in light or dark mode. docs/admin.md, "Screen readers".
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, visitor } from "./harness.js";

// A long address with no place to break is what pushed /account sideways at 320 px.
const AGENT = { email: "ana.featherstonehaugh@support.example.com", name: "Ana Featherstonehaugh-Smythe" };
let page;
let conversationId;
let endpointId;
const world = fixture({ site: "Acme Shop", agent: AGENT, email: true }, async ({ porch, browser, host, site }) => {
  const v = await visitor(browser, host.url);
  await v.say("Hello from a small screen");
  await v.context.close();
  const list = await porch.api("GET", "/conversations");
  conversationId = (list.body.conversations?.[0] ?? list.body[0])?.id;
  // An endpoint for its page (on loopback: this machine resolves no public name), made while the
  // server allows private addresses; then it refuses them again, as the URL test needs.
  const env = world.smtp.env;
  await porch.stop();
  await porch.start({ env: { ...env, PORCH_ALLOW_PRIVATE_NETWORKS: "1" } });
  const hook = await porch.api("POST", `/sites/${site.key}/integrations/webhooks`,
    { url: "http://127.0.0.1:9/hook", events: ["conversation.closed"] });
  assert.equal(hook.status, 201, JSON.stringify(hook.body));
  endpointId = hook.body.id;
  await porch.stop();
  await porch.start({ env });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, AGENT.email);
});

/**
 * How the control `#id` stands after a refused form: whether it is marked invalid, the ids that
 * describe it, the text of the first (the error), whether it has the focus, and the ids of every
 * control marked invalid on the page.
 */
const marks = async (id) => {
  // Autofocus happens after the page's load event, at its next rendering.
  await page.waitForFunction(() => document.activeElement !== document.body);
  return page.evaluate((id) => {
    const el = document.getElementById(id);
    const ids = (el.getAttribute("aria-describedby") ?? "").split(/\s+/).filter(Boolean);
    return {
      invalid: el.getAttribute("aria-invalid"),
      describedby: ids,
      error: ids[0] ? document.getElementById(ids[0])?.textContent.trim() : null,
      focused: document.activeElement === el,
      allInvalid: [...document.querySelectorAll("[aria-invalid=true]")].map((e) => e.id),
    };
  }, id);
};

/** Sends the form holding `#id` as typed, past the browser's own checks (the server's are tested). */
const send = async (id) => {
  await page.locator(`#${id}`).evaluate((el) => { el.form.noValidate = true; });
  await Promise.all([page.waitForEvent("load"), page.locator(`#${id}`).press("Enter")]);
};

/** Asserts that `#id` alone is marked, focused and described by `error` (then by `hint`, if any). */
const assertRefused = async (id, error, hint) => {
  const m = await marks(id);
  assert.equal(m.invalid, "true", `#${id} is marked invalid`);
  assert.deepEqual(m.allInvalid, [id], "only the refused field is marked");
  assert.match(m.error, error);
  assert.deepEqual(m.describedby.slice(1), hint ? [hint] : [], "the hint still describes it");
  assert.equal(m.focused, true, `#${id} has the focus`);
  assert.equal(await page.locator(`#${m.describedby[0]}`).getAttribute("role"), "alert");
};

test("a new site with a blank name comes back with the name field marked and focused", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/sites/new`);
  await page.locator("#name").fill("   ");
  await page.locator("#origins").fill("https://shop.example");
  await send("name");
  await assertRefused("name", /name must have 1 to 80 characters/, "name-hint");
});

test("a new site with a bad origin comes back with the origins marked, the name not", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/sites/new`);
  await page.locator("#name").fill("Shop");
  await page.locator("#origins").fill("shop.example/checkout");
  // Enter in a textarea is a new line: the button sends.
  await page.locator("#origins").evaluate((el) => { el.form.noValidate = true; });
  await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Create site" }).click()]);
  await assertRefused("origins", /shop\.example\/checkout: /, "origins-hint");
  assert.equal(await page.locator("#origins").inputValue(), "shop.example/checkout", "kept as typed");
});

test("a site's edit form marks a brake and the attachment limit out of range", { timeout: 30000 }, async () => {
  const { porch, site } = world;
  await page.goto(`${porch.url}/sites/${site.key}`);
  await page.locator("#visitor_burst").fill("0");
  await send("visitor_burst");
  await assertRefused("visitor_burst", /visitor burst must be a whole number/, "visitor_burst-hint");
  await page.goto(`${porch.url}/sites/${site.key}`);
  await page.locator("#attachment_max_mb").fill("99");
  await send("attachment_max_mb");
  await assertRefused("attachment_max_mb", /largest attachment is a number of MB from 0/, "attachment_max_mb-hint");
});

test("the site delete page's wrong name still marks and focuses its field", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/sites/${world.site.key}/delete`);
  await page.locator("#confirm").fill("Not the name");
  await send("confirm");
  await assertRefused("confirm", /does not match the site's name/);
});

test("a refused webhook URL marks the URL field", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/sites/${world.site.key}/webhooks`);
  await page.locator("#url").fill("https://127.0.0.1/hook");
  await page.locator("input[name='conversation.closed']").check();
  await send("url");
  await assertRefused("url", /The URL is refused/, "url-hint");
});

test("a webhook without events is the form's error: the notice keeps the focus", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/sites/${world.site.key}/webhooks`);
  await page.locator("#url").fill("https://hooks.example.com/other");
  for (const box of await page.locator("form[action$='/webhooks'] input[type=checkbox]").all()) await box.uncheck();
  await send("url");
  assert.deepEqual((await marks("url")).allInvalid, []);
  const focused = await page.evaluate(() => document.activeElement.className);
  assert.match(focused, /notice-error/);
});

test("an invitation to a bad address marks the email field", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/team`);
  await page.locator("#invite-name").fill("Bo");
  await page.locator("#invite-email").fill("bo@localhost");
  await send("invite-email");
  await assertRefused("invite-email", /Enter an email address/);
});

test("a blank canned reply marks its text; a taken shortcut marks the shortcut", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/canned`);
  await page.locator("#canned-new-shortcut").fill("thanks");
  await page.locator("#canned-new-body").fill("Thanks!");
  await send("canned-new-shortcut");
  await page.locator("#canned-new-shortcut").fill("hello");
  await page.locator("#canned-new-body").fill("   ");
  await send("canned-new-shortcut");
  await assertRefused("canned-new-body", /The message is empty/);
  await page.locator("#canned-new-body").fill("Hello there");
  await page.locator("#canned-new-shortcut").fill("thanks");
  await send("canned-new-shortcut");
  await assertRefused("canned-new-shortcut", /already used/);
});

test("on /account a blank name and a wrong current password mark their fields", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/account`);
  await page.locator("#account-name").fill("   ");
  await send("account-name");
  await assertRefused("account-name", /Enter a name/, "name-hint");
  await page.locator("#current").fill("not my password");
  await page.locator("#new").fill("a brand new password");
  await send("new");
  await assertRefused("current", /current password is not right/);
});

test("an email delay out of range marks that delay", { timeout: 30000 }, async () => {
  await page.goto(`${world.porch.url}/sites/${world.site.key}/email`);
  await page.locator("#reply_delay_secs").fill("99999999");
  await send("reply_delay_secs");
  await assertRefused("reply_delay_secs", /reply delay must be a whole number/, "reply_delay_secs-hint");
});

test("business hours mark the wrong time zone, then the day whose span does not parse", { timeout: 30000 }, async () => {
  const hours = `${world.porch.url}/sites/${world.site.key}/hours`;
  await page.goto(hours);
  await page.locator("#time_zone").fill("Mars/Base");
  await send("time_zone");
  await assertRefused("time_zone", /"Mars\/Base" is not a time zone/, "time-zone-hint");
  assert.equal(await page.locator("#time_zone").inputValue(), "Mars/Base", "kept as typed");
  await page.locator("#time_zone").fill("Europe/Berlin");
  await page.locator("#wednesday").fill("09:00-17:00, 25:00-26:00");
  await send("wednesday");
  await assertRefused("wednesday", /Wednesday: "25:00" is not a time/, "spans-hint");
  await page.locator("#wednesday").fill("09:00-17:00");
  await page.locator("#away_messages").fill("not a language line");
  await page.locator("#away_messages").evaluate((el) => { el.form.noValidate = true; });
  await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Save hours" }).click()]);
  await assertRefused("away_messages", /^not a language line: Write each away message in another language on its own line/, "away-messages-hint");
});

/** The admin pages an admin reaches, by path. */
const adminPages = () => {
  const key = world.site.key;
  return ["/inbox", `/conversations/${conversationId}`, "/account", "/account/two-factor", "/sites",
    "/sites/new", `/sites/${key}`, `/sites/${key}/delete`, `/sites/${key}/slack`, `/sites/${key}/discord`,
    `/sites/${key}/webhooks`, `/sites/${key}/webhooks/${endpointId}`, `/sites/${key}/email`,
    `/sites/${key}/hours`, `/sites/${key}/prechat`, `/sites/${key}/identity`, "/team", "/audit",
    "/deliveries", "/capacity", "/privacy", "/canned", "/search?q=hello", "/docs", "/docs/admin.md",
    "/docs/configuration.md"];
};

for (const colorScheme of ["light", "dark"]) {
  test(`no admin page scrolls sideways at 320 px (${colorScheme})`, { timeout: 120000 }, async () => {
    // Not isMobile: a mobile viewport would zoom out to fit a too-wide page and hide the overflow.
    const context = await world.browser.newContext({ viewport: { width: 320, height: 640 }, colorScheme });
    const narrow = await context.newPage();
    narrow.setDefaultTimeout(15000);
    await signIn(narrow, world.porch, AGENT.email);
    const wide = [];
    for (const path of adminPages()) {
      const response = await narrow.goto(`${world.porch.url}${path}`);
      assert.ok(response.ok(), `${path}: ${response.status()}`);
      const m = await narrow.evaluate(() => {
        const edge = document.documentElement.clientWidth;
        // Inside a box that scrolls (or clips) sideways on its own, which is fine.
        const inBox = (el) => {
          for (let box = el.parentElement; box && box !== document.body; box = box.parentElement) {
            if (getComputedStyle(box).overflowX !== "visible") return true;
          }
          return false;
        };
        return {
          scroll: document.documentElement.scrollWidth,
          client: edge,
          // What sticks out, to name in a failure: the innermost elements past the right edge.
          past: [...document.body.querySelectorAll("*")]
            .filter((el) => el.getBoundingClientRect().right > edge + 0.5 && !inBox(el))
            .slice(-3)
            .map((el) => `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}.${el.className} (${Math.round(el.getBoundingClientRect().right)} px)`),
        };
      });
      if (m.scroll > m.client) wide.push({ path, ...m });
    }
    assert.deepEqual(wide, [], "pages wider than 320 px");
    await context.close();
  });
}
