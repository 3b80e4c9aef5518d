// Helpers of the admin inbox browser tests: the first-run setup token from the server log,
// signing in, and a visitor on a host page of another origin.
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { ARTIFACTS, waitFor } from "./harness.js";

export const PASSWORD = "correct horse battery staple";

/** The setup token porch logs at start-up on a fresh install. */
export async function setupToken(porch) {
  return waitFor("the setup token in the server log", () => {
    const match = porch.log.match(/setup token ([A-Za-z0-9_-]{20,})/);
    return match && match[1];
  });
}

/** Signs in on `page`; waits for the page after the redirect. */
export async function signIn(page, porch, email, password = PASSWORD) {
  await page.goto(`${porch.url}/login`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith("/login")),
    page.getByRole("button", { name: "Sign in" }).click()]);
}

/** Saves a full-page screenshot under tests/browser/artifacts/. */
export async function snap(page, name) {
  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Opens the host page in a fresh context and returns a visitor who can send messages. */
export async function visitor(browser, hostUrl) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 760 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  await page.goto(hostUrl);
  await page.locator("[data-porch=launcher]").click();
  await waitFor("the widget to connect", async () =>
    (await page.locator("[data-porch=status]").getAttribute("data-state")) === "connected");
  return {
    page,
    context,
    async say(text) {
      const before = await page.locator("[data-porch=message][data-author=visitor][data-status=sent]").count();
      await page.locator("[data-porch=input]").fill(text);
      await page.locator("[data-porch=input]").press("Enter");
      await waitFor("the message to be acknowledged", async () =>
        (await page.locator("[data-porch=message][data-author=visitor][data-status=sent]").count()) > before);
    },
  };
}
