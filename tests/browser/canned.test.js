// Canned replies as agents use them: an admin adds a shared reply on /canned, then in a
// conversation's reply box, keyboard only, "/tha" opens the picker (a listbox the box points
// into with aria-activedescendant), the arrows move, Enter inserts the reply with its
// placeholders filled instead of sending, Escape closes the list, and Enter then sends. The
// "Canned reply" button types the "/" for whoever does not know it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, snap, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
let page;
const world = fixture({ site: "Acme Shop", agent: AGENT }, async ({ browser }) => {
  page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
  page.setDefaultTimeout(15000);
  page.on("dialog", async (d) => { await d.dismiss(); assert.fail(`dialog: ${d.message()}`); });
});

const activeOption = () => page.evaluate(() => {
  const box = document.getElementById("reply-body");
  const id = box.getAttribute("aria-activedescendant");
  return id ? document.getElementById(id)?.innerText : null;
});

test("the Canned reply button: with no reply yet, it says where to add them", { timeout: 90000 }, async () => {
  const { porch, browser, host } = world;
  await signIn(page, porch, AGENT.email);
  const v = await visitor(browser, host.url);
  await v.say("Is anyone there?");
  await page.goto(`${porch.url}/inbox`);
  await page.locator("#conversations li a").first().click();
  await page.waitForURL(/\/conversations\/\d+$/);
  const empty = page.locator("#canned-empty");
  assert.equal(await empty.isHidden(), true);
  await page.getByRole("button", { name: "Canned reply" }).click();
  await empty.waitFor();
  assert.equal(await page.locator("#reply-body").inputValue(), "", "no \"/\" to send by mistake");
  assert.equal(await page.evaluate(() => document.activeElement.id), "reply-body");
  assert.equal(await empty.getByRole("link", { name: "Canned replies" }).getAttribute("href"), "/canned");
  await page.keyboard.type("x");
  assert.equal(await empty.isHidden(), true, "editing the box hides the line");
  await v.context.close();
});

test("type /thanks in the reply box, pick with the keyboard, Enter inserts the filled text",
  { timeout: 90000 }, async () => {
    const { porch, browser, host } = world;
    await signIn(page, porch, AGENT.email);
    await page.goto(`${porch.url}/canned`);
    const add = async (shortcut, text, scope) => {
      await page.getByLabel("Shortcut", { exact: true }).last().fill(shortcut);
      await page.locator("#canned-new-body").fill(text);
      await page.locator("#canned-scope").selectOption(scope);
      await Promise.all([page.waitForURL(/notice=created/), page.getByRole("button", { name: "Add" }).click()]);
    };
    await add("thanks", "Thanks for waiting{visitor.name}! {agent.name} from {site.name} here.", "shared");
    await add("thanks-bye", "Bye </textarea><b>now</b>", "personal");
    await add("hours", "We answer 9 to 5.", "shared");
    assert.equal(await page.locator("main b").count(), 0);
    await snap(page, "canned-page");

    const v = await visitor(browser, host.url);
    await v.say("Hello, anyone there?");
    await page.goto(`${porch.url}/inbox`);
    await page.locator("#conversations li a").first().click();
    await page.waitForURL(/\/conversations\/\d+$/);
    const box = page.locator("#reply-body");
    const list = page.getByRole("listbox", { name: "Canned replies" });
    await box.focus();

    await page.keyboard.type("/tha");
    await list.waitFor();
    const options = list.getByRole("option");
    assert.deepEqual((await options.allInnerTexts()).map((t) => t.split(" ")[0]), ["/thanks", "/thanks-bye"]);
    assert.match(await activeOption(), /^\/thanks shared/);
    // A screen reader hears the list open (a textarea cannot be a combobox): a polite status.
    const status = page.locator("[data-canned-status]");
    assert.equal(await status.getAttribute("role"), "status");
    assert.equal(await status.textContent(), "2 canned replies: Up and Down to choose, Enter to insert.");
    await page.keyboard.press("ArrowDown");
    assert.match(await activeOption(), /^\/thanks-bye personal/);
    assert.equal(await options.nth(1).getAttribute("aria-selected"), "true");
    await page.keyboard.press("ArrowUp");
    assert.match(await activeOption(), /^\/thanks shared/);
    await snap(page, "canned-picker");
    await page.keyboard.press("Enter");
    assert.equal(await list.isHidden(), true);
    assert.equal(await status.textContent(), "", "closed, it says nothing");
    assert.equal(await box.inputValue(), "Thanks for waiting! Ana from Acme Shop here.");
    assert.equal(await page.evaluate(() => document.activeElement.id), "reply-body");
    // Enter inserted: nothing was sent.
    assert.equal(await page.locator(".message-agent").count(), 0);

    // Fuzzy: "/hrs" finds "hours"; Escape closes without inserting, and Enter sends again.
    await page.keyboard.type(" /hrs");
    await list.waitFor();
    assert.match(await activeOption(), /^\/hours/);
    await page.keyboard.press("Escape");
    assert.equal(await list.isHidden(), true);
    await page.keyboard.press("Backspace");
    await page.keyboard.press("Backspace");
    await page.keyboard.press("Backspace");
    await page.keyboard.press("Backspace");
    await page.keyboard.press("Backspace");
    await page.keyboard.press("Enter");
    await page.locator(".message-agent", { hasText: "Ana from Acme Shop here." }).waitFor();
    await waitFor("the box to empty", async () => (await box.inputValue()) === "");
    const theirs = v.page.locator("[data-porch=message][data-author=agent]");
    await theirs.first().waitFor();
    assert.equal(await theirs.locator(".bubble").innerText(), "Thanks for waiting! Ana from Acme Shop here.");

    // A slash inside a word is text, not a shortcut.
    await page.keyboard.type("and/or");
    assert.equal(await list.isHidden(), true);
    // The button, from the keyboard: a space and "/" after the word, and the list of all of them.
    await page.getByRole("button", { name: "Canned reply" }).focus();
    await page.keyboard.press("Enter");
    await list.waitFor();
    assert.deepEqual((await options.allInnerTexts()).map((t) => t.split(" ")[0]), ["/hours", "/thanks", "/thanks-bye"]);
    assert.equal(await page.evaluate(() => document.activeElement.id), "reply-body");
    await page.keyboard.press("Enter");
    assert.equal(await box.inputValue(), "and/or We answer 9 to 5.");
    assert.equal(await page.locator("#canned-empty").isHidden(), true, "there are replies to offer");
    // Clicked again and again (the replies known by now, the click quicker than the box's blur),
    // the list opens each time; with the caret inside a word, a space on each side keeps the
    // reply apart from it.
    const button = page.getByRole("button", { name: "Canned reply" });
    await box.fill("hello world");
    await box.evaluate((el) => el.setSelectionRange(8, 8));
    for (const round of [1, 2]) {
      await button.click({ delay: 0 });
      await list.waitFor();
      assert.equal(await page.evaluate(() => document.activeElement.id), "reply-body", `round ${round}`);
      if (round === 1) {
        await page.keyboard.press("Escape");
        await box.fill("hello world");
        await box.evaluate((el) => el.setSelectionRange(8, 8));
      }
    }
    assert.equal(await box.inputValue(), "hello wo / rld");
    await page.keyboard.press("Enter");
    assert.equal(await box.inputValue(), "hello wo We answer 9 to 5. rld");
    await v.context.close();
  });

test("deleting a canned reply asks first; cancelling keeps it", { timeout: 60000 }, async () => {
  const { porch, browser } = world;
  const context = await browser.newContext();
  const admin = await context.newPage();
  admin.setDefaultTimeout(15000);
  await signIn(admin, porch, AGENT.email);
  await admin.goto(`${porch.url}/canned`);
  const questions = [];
  let answer = false;
  admin.on("dialog", async (d) => { questions.push(d.message()); await (answer ? d.accept() : d.dismiss()); });
  const remove = admin.getByRole("button", { name: "Delete /hours" });
  await remove.click();
  await waitFor("the question", async () => questions.length === 1);
  assert.match(questions[0], /^Delete the canned reply \/hours\? This cannot be undone\.$/);
  await admin.reload();
  assert.equal(await remove.count(), 1, "kept after cancelling");
  answer = true;
  await Promise.all([admin.waitForURL(/notice=/), remove.click()]);
  assert.equal(await remove.count(), 0, "deleted once confirmed");
  await context.close();
});
