// Single sign-on against a real OpenID provider: the certified `oidc-provider` package runs on a
// loopback port with a client registered for Porch's callback, its dev login page (any login; the
// login is the account id, so the test picks whose claims come back) and an account store whose
// `email` and `email_verified` claims the test controls. Porch is started with PORCH_OIDC_*.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import Provider from "oidc-provider";
import { Porch, freePort, launchBrowser, signIn, snap, waitFor } from "./harness.js";

const CLIENT_ID = "porch";
const CLIENT_SECRET = "a-client-secret-for-the-browser-test";

// The provider's accounts, by login: what its ID tokens say.
const ACCOUNTS = {
  ana: { email: "ana@example.com", email_verified: true, name: "Ana" },
  "ana-twin": { email: "ana@example.com", email_verified: true, name: "Ana's twin" },
  bo: { email: "bo@example.com", email_verified: false, name: "Bo" },
  stranger: { email: "stranger@elsewhere.example", email_verified: true, name: "Stranger" },
  cy: { email: "cy@staff.example", email_verified: true, name: "Cy Young" },
  dee: { email: "dee@example.com", email_verified: true, name: "Dee" },
};

/** Starts the provider on `port` with Porch's client; returns {issuer, close}. */
async function startProvider(port, porchUrl) {
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      redirect_uris: [`${porchUrl}/login/sso/callback`],
      grant_types: ["authorization_code"],
      response_types: ["code"],
    }],
    async findAccount(_ctx, id) {
      const claims = ACCOUNTS[id];
      if (!claims) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, ...claims }) };
    },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    // Put the scopes' claims in the ID token (as Keycloak, Google and Entra do), not only in
    // the userinfo answer: Porch reads the ID token.
    conformIdTokenClaims: false,
    // No consent step for Porch: grant the scopes it asks for.
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId
        || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope("openid email profile");
      await grant.save();
      return grant;
    },
    cookies: { keys: ["browser-test-cookie-key"] },
  });
  // While `held.on`, the provider's redirect back to Porch is kept here instead of followed, so
  // a test can open the callback URL itself (changed, or in another browser).
  const held = { on: false, url: null };
  provider.use(async (ctx, next) => {
    await next();
    const location = ctx.response.get("location") || "";
    if (held.on && location.startsWith(`${porchUrl}/login/sso/callback`)) {
      held.url = new URL(location);
      ctx.remove("location");
      ctx.status = 200;
      ctx.type = "text/html";
      ctx.body = "<p>held</p>";
    }
  });
  const server = provider.listen(port, "127.0.0.1");
  await new Promise((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  return {
    issuer,
    held,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

let porch;
let provider;
let browser;

// Node 20 runs a file's top-level `before` hooks concurrently, so the whole set-up is one step,
// taken by the first test.
async function world() {
  if (porch) return;
  porch = await Porch.create();
  await porch.addAgent("admin@example.com", "Admin");
  // Ana and Bo exist (without passwords: SSO is how they get in); Cy does not.
  await porch.cli(["user", "add", "--email", "ana@example.com", "--name", "Ana"]);
  await porch.cli(["user", "add", "--email", "bo@example.com", "--name", "Bo"]);
  await porch.cli(["user", "add", "--email", "dee@example.com", "--name", "Dee"]);
  provider = await startProvider(await freePort(), porch.url);
  await porch.start({
    env: {
      PORCH_OIDC_ISSUER: provider.issuer,
      PORCH_OIDC_CLIENT_ID: CLIENT_ID,
      PORCH_OIDC_CLIENT_SECRET: CLIENT_SECRET,
      PORCH_OIDC_LABEL: "Sign in with Acme ID",
      PORCH_OIDC_AUTO_PROVISION_DOMAINS: "staff.example",
    },
  });
  browser = await launchBrowser();
}

after(async () => {
  await browser?.close();
  await provider?.close();
  await porch?.dispose();
});

/** A fresh browser (no Porch session, no provider session) that reaches loopback only. */
async function newPage() {
  const context = await browser.newContext();
  // The provider's dev pages import a web font: nothing leaves this machine.
  await context.route((url) => !["127.0.0.1", "localhost"].includes(url.hostname), (route) => route.abort());
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  return page;
}

/** From Porch's sign-in page (already open), through the provider's login as `login`. */
async function signInAtProvider(page, login) {
  await waitFor("the single sign-on button", async () => {
    if (await page.locator("#sso").count()) return true;
    await page.reload(); // discovery may still be under way right after start
    return false;
  }, { timeoutMs: 15000, everyMs: 300 });
  await page.getByRole("link", { name: "Sign in with Acme ID" }).click();
  await page.waitForURL((u) => u.origin === provider.issuer, { waitUntil: "commit" });
  await page.locator("input[name=login]").fill(login);
  await page.locator("input[name=password]").fill("any password");
  await page.getByRole("button", { name: "Sign-in" }).click();
}

/** The message the sign-in page shows after a refused single sign-on. */
async function refusal(page, code) {
  await page.waitForURL((u) => u.pathname === "/login" && u.searchParams.get("sso_error") === code);
  return page.locator(".notice").innerText();
}

test("an existing user signs in through the provider and lands on the inbox", { timeout: 60000 }, async () => {
  await world();
  const page = await newPage();
  await page.goto(`${porch.url}/login`);
  await signInAtProvider(page, "ana");
  await page.waitForURL((u) => u.origin === porch.url && u.pathname === "/inbox");
  assert.match(await page.locator("body").innerText(), /Ana/);

  const { status, body } = await porch.api("GET", "/audit?action=session.signed_in&actor=ana@example.com");
  assert.equal(status, 200);
  assert.equal(body.events[0].detail.method, "sso");
  assert.equal(body.events[0].detail.linked, true, "the first sign-in links the provider's account");
  await page.context().close();
});

test("the page asked for before signing in survives the round trip", { timeout: 60000 }, async () => {
  await world();
  const page = await newPage();
  await page.goto(`${porch.url}/account`);
  await page.waitForURL(/\/login\?next=%2Faccount|\/login\?next=\/account/);
  await signInAtProvider(page, "ana");
  await page.waitForURL((u) => u.origin === porch.url && u.pathname === "/account");
  assert.match(await page.locator("body").innerText(), /ana@example\.com/);
  await page.context().close();
});

test("an email the provider has not verified is refused", { timeout: 60000 }, async () => {
  await world();
  const page = await newPage();
  await page.goto(`${porch.url}/login`);
  await signInAtProvider(page, "bo");
  assert.match(await refusal(page, "sso_email_unverified"), /has not verified your email/);
  const { body } = await porch.api("GET", "/audit?action=session.sign_in_failed&actor=bo@example.com");
  assert.equal(body.events[0].detail.reason, "sso_email_unverified");
  await page.context().close();
});

test("someone without a Porch account is refused", { timeout: 60000 }, async () => {
  await world();
  const page = await newPage();
  await page.goto(`${porch.url}/login`);
  await signInAtProvider(page, "stranger");
  assert.match(await refusal(page, "sso_unknown_user"), /no Porch account for your email/);
  await snap(page, "sso-refused");
  await page.context().close();
});

test("a verified person from a provisioned domain gets an agent account", { timeout: 60000 }, async () => {
  await world();
  const page = await newPage();
  await page.goto(`${porch.url}/login`);
  await signInAtProvider(page, "cy");
  await page.waitForURL((u) => u.origin === porch.url && u.pathname === "/inbox");
  assert.match(await page.locator("body").innerText(), /Cy Young/);
  // An agent: the admin pages are not for them.
  const team = await page.goto(`${porch.url}/team`);
  assert.equal(team.status(), 403);

  const { body } = await porch.api("GET", "/audit?action=user.created&actor=cy@staff.example");
  assert.equal(body.events.length, 1);
  assert.equal(body.events[0].detail.via, "sso");
  assert.equal(body.events[0].detail.role, "agent");
  await page.context().close();
});

test("a tampered state is refused, and so is a callback in another browser", { timeout: 60000 }, async () => {
  await world();
  const page = await newPage();
  // Hold the provider's redirect back to Porch, and send the browser there with another state.
  provider.held.on = true;
  provider.held.url = null;
  await page.goto(`${porch.url}/login`);
  await signInAtProvider(page, "ana");
  const callback = await waitFor("the provider's redirect to the callback", () => provider.held.url);
  provider.held.on = false;
  assert.ok(callback.searchParams.get("code"), "the provider did send a code");
  const tampered = new URL(callback);
  tampered.searchParams.set("state", "tampered");
  await page.goto(tampered.toString());
  assert.match(await refusal(page, "sso_state_mismatch"), /did not start in this browser/);

  // The untouched callback URL, opened by a browser that did not start the sign-in.
  const other = await newPage();
  await other.goto(callback.toString());
  assert.match(await refusal(other, "sso_state_mismatch"), /did not start in this browser/);
  const signedIn = await other.goto(`${porch.url}/inbox`);
  assert.match(new URL(signedIn.url()).pathname, /^\/login/, "not signed in");
  await page.context().close();
  await other.context().close();
});

test("a refusal by the provider keeps the page asked for, and its words go to the log only", { timeout: 60000 },
  async () => {
    await world();
    const page = await newPage();
    provider.held.on = true;
    provider.held.url = null;
    await page.goto(`${porch.url}/account`);
    await page.waitForURL(/\/login\?next=/);
    await signInAtProvider(page, "ana");
    const callback = await waitFor("the provider's redirect to the callback", () => provider.held.url);
    provider.held.on = false;
    // The provider refuses instead (its answer for a cancelled or denied sign-in), in this browser.
    const refused = new URL(callback);
    refused.searchParams.delete("code");
    refused.searchParams.set("error", "access_denied");
    refused.searchParams.set("error_description", "<b>policy says no</b> WORDS-7731");
    await page.goto(refused.toString());
    assert.match(await refusal(page, "sso_provider_error"), /did not sign you in/);
    assert.equal(new URL(page.url()).searchParams.get("next"), "/account");
    assert.doesNotMatch(await page.content(), /WORDS-7731/);
    await waitFor("the provider's words in Porch's log", () => porch.log.includes("WORDS-7731"));
    await page.context().close();
  });

test("another provider account with the same email cannot take over a linked user", { timeout: 60000 }, async () => {
  await world();
  const page = await newPage();
  await page.goto(`${porch.url}/login`);
  await signInAtProvider(page, "ana-twin");
  assert.match(await refusal(page, "sso_subject_mismatch"), /linked to another account/);
  await page.context().close();
});

test("a user an admin disabled is refused, though the provider still vouches for them", { timeout: 60000 }, async () => {
  await world();
  const dee = await newPage();
  await dee.goto(`${porch.url}/login`);
  await signInAtProvider(dee, "dee");
  await dee.waitForURL((u) => u.origin === porch.url && u.pathname === "/inbox");
  await dee.context().close();

  const admin = await newPage();
  await signIn(admin, porch, "admin@example.com");
  await admin.goto(`${porch.url}/team`);
  admin.once("dialog", (d) => d.accept()); // "Disable Dee? …"
  await admin.locator("li.member", { hasText: "dee@example.com" }).getByRole("button", { name: "Disable" }).click();
  await admin.waitForURL(/notice=disabled/);
  await admin.context().close();

  const again = await newPage();
  await again.goto(`${porch.url}/login`);
  await signInAtProvider(again, "dee");
  assert.match(await refusal(again, "sso_user_disabled"), /Your Porch account is disabled/);
  await again.context().close();
});

test("with the provider down at start, the page says so, and the button comes once it is up", { timeout: 90000 }, async () => {
  await world();
  const late = await Porch.create();
  let lateProvider = null;
  try {
    await late.addAgent("admin@example.com", "Admin");
    const port = await freePort();
    await late.start({
      env: {
        PORCH_OIDC_ISSUER: `http://127.0.0.1:${port}`,
        PORCH_OIDC_CLIENT_ID: CLIENT_ID,
        PORCH_OIDC_CLIENT_SECRET: CLIENT_SECRET,
      },
    });
    const page = await newPage();
    await page.goto(`${late.url}/login`);
    assert.match(await page.locator("#sso-unavailable").innerText(), /not available right now/);
    assert.equal(await page.locator("#sso").count(), 0);
    await page.goto(`${late.url}/login/sso`);
    assert.match(await refusal(page, "sso_unavailable"), /cannot reach the sign-in provider/);

    lateProvider = await startProvider(port, late.url);
    // Discovery is retried after 1, 2, 4, 8 … seconds.
    await waitFor("the button once discovery succeeded", async () => {
      await page.goto(`${late.url}/login`);
      return (await page.locator("#sso").count()) === 1;
    }, { timeoutMs: 40000, everyMs: 500 });
    assert.equal(await page.locator("#sso").innerText(), "Sign in with SSO", "the default label");
    assert.match(late.log, /single sign-on: provider discovery failed/);
    await page.context().close();
  } finally {
    await lateProvider?.close();
    await late.dispose();
  }
});
