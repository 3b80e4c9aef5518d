// Single sign-on against a real OpenID provider: the certified `oidc-provider` package runs on a
// loopback port with a client registered for Porch's callback, its dev login page (any login; the
// login is the account id, so the test picks whose claims come back) and an account store whose
// `email` and `email_verified` claims the test controls. Porch is started with PORCH_OIDC_*.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
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
  eve: { email: "eve@example.com", email_verified: true, name: "Eve" },
  fay: { email: "fay@example.com", email_verified: true, name: "Fay" },
};

/** A private RSA signing key as a JWK, with key id `kid`. */
function signingKey(kid) {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { ...privateKey.export({ format: "jwk" }), kid, alg: "RS256", use: "sig" };
}

/**
 * Starts the provider on `port` with Porch's client; returns {issuer, held, close}. `keys`: its
 * signing keys (private JWKs; it signs with the first), else the package's development key.
 */
async function startProvider(port, porchUrl, { keys } = {}) {
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    ...(keys ? { jwks: { keys } } : {}),
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
  await porch.cli(["user", "add", "--email", "eve@example.com", "--name", "Eve"]);
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

/** Signs `login` in at the provider from `start` (a Porch page that leads to it), holding back the
 * provider's redirect to Porch's callback; returns that callback's URL, for the test to send. */
async function heldCallback(page, login, start = `${porch.url}/login`) {
  provider.held.on = true;
  provider.held.url = null;
  await page.goto(start);
  await signInAtProvider(page, login);
  const callback = await waitFor("the provider's redirect to the callback", () => provider.held.url);
  provider.held.on = false;
  return callback;
}

/** From Porch's sign-in page (already open), through the provider's login as `login`. */
async function signInAtProvider(page, login, at = provider) {
  await waitFor("the single sign-on button", async () => {
    if (await page.locator("#sso").count()) return true;
    await page.reload(); // discovery may still be under way right after start
    return false;
  }, { timeoutMs: 15000, everyMs: 300 });
  await page.getByRole("link", { name: "Sign in with Acme ID" }).click();
  await page.waitForURL((u) => u.origin === at.issuer, { waitUntil: "commit" });
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

test("an invitation is spent by the first sign-in through the provider, so it cannot add a password later",
  { timeout: 60000 }, async () => {
    await world();
    const admin = await newPage();
    await signIn(admin, porch, "admin@example.com", "correct horse battery staple");
    await admin.goto(`${porch.url}/team`);
    await admin.getByLabel("Name", { exact: true }).fill("Fay");
    await admin.getByLabel("Email", { exact: true }).fill("fay@example.com");
    await admin.getByRole("button", { name: "Create invitation link" }).click();
    const link = await admin.locator("#new-link").inputValue();
    await admin.context().close();

    const page = await newPage();
    await page.goto(`${porch.url}/login`);
    await signInAtProvider(page, "fay");
    await page.waitForURL((u) => u.origin === porch.url && u.pathname === "/inbox");
    // Shut out at the provider later, Fay must not get in with a password of her own choosing.
    const spent = await page.goto(link);
    assert.equal(spent.status(), 410);
    assert.equal(await page.getByLabel("New password").count(), 0);
    // Her account page offers no password to change and no two-factor for a password she lacks.
    await page.goto(`${porch.url}/account`);
    await page.getByText("You sign in with single sign-on and have no password.").waitFor();
    assert.equal(await page.getByLabel("Current password").count(), 0);
    assert.equal(await page.getByRole("button", { name: "Set up two-factor sign-in" }).count(), 0);
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
  const callback = await heldCallback(page, "ana");
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
    const callback = await heldCallback(page, "ana", `${porch.url}/account`);
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
  // The audit names the provider account that tried, not only the account it claimed to be.
  const { body } = await porch.api("GET", "/audit?action=session.sign_in_failed&actor=ana@example.com");
  const tried = body.events.find((e) => e.detail.reason === "sso_subject_mismatch");
  assert.equal(tried.detail.subject, "ana-twin");
  assert.equal(tried.detail.issuer, provider.issuer);
  assert.match(porch.log, /sso_subject_mismatch.*ana-twin|ana-twin.*sso_subject_mismatch/);
});

test("a linked person whose email changed at the provider still signs in as themselves", { timeout: 60000 },
  async () => {
    await world();
    const first = await newPage();
    await first.goto(`${porch.url}/login`);
    await signInAtProvider(first, "eve");
    await first.waitForURL((u) => u.origin === porch.url && u.pathname === "/inbox");
    await first.context().close();

    // The same provider account (same `sub`) now has another address, which no Porch user has.
    ACCOUNTS.eve.email = "eve.new@example.com";
    try {
      const again = await newPage();
      await again.goto(`${porch.url}/account`);
      await again.waitForURL(/\/login\?next=/);
      await signInAtProvider(again, "eve");
      await again.waitForURL((u) => u.origin === porch.url && u.pathname === "/account");
      assert.match(await again.locator("body").innerText(), /eve@example\.com/, "still Eve's account");
      await again.context().close();
    } finally {
      ACCOUNTS.eve.email = "eve@example.com";
    }
  });

test("a callback with neither a code nor an error is the provider's error, and the log says so", { timeout: 60000 },
  async () => {
    await world();
    const page = await newPage();
    const callback = await heldCallback(page, "ana");
    const bare = new URL(callback);
    bare.searchParams.delete("code");
    await page.goto(bare.toString());
    assert.match(await refusal(page, "sso_provider_error"), /did not sign you in/);
    await waitFor("the log line", () => /neither a code nor an error/.test(porch.log));
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
    assert.equal(await page.locator("#sso-unavailable").count(), 0, "said once, in the notice");

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

test("an issuer that differs from the provider's by a final slash is called misconfigured, not unreachable",
  { timeout: 60000 }, async () => {
    await world();
    const wrong = await Porch.create();
    try {
      await wrong.addAgent("admin@example.com", "Admin");
      await wrong.start({
        env: {
          PORCH_OIDC_ISSUER: `${provider.issuer}/`,
          PORCH_OIDC_CLIENT_ID: CLIENT_ID,
          PORCH_OIDC_CLIENT_SECRET: CLIENT_SECRET,
        },
      });
      // The log says what the provider states and what to set.
      await waitFor("the misconfiguration in the log", () => wrong.log.includes(
        `the provider says its issuer is ${provider.issuer}; set PORCH_OIDC_ISSUER to exactly that`));
      const page = await newPage();
      await page.goto(`${wrong.url}/login`);
      const hint = await page.locator("#sso-unavailable").innerText();
      assert.match(hint, /misconfigured/);
      assert.doesNotMatch(hint, /keeps trying/);
      await page.goto(`${wrong.url}/login/sso`);
      assert.match(await refusal(page, "sso_misconfigured"), /misconfigured.*admin/);
      assert.equal(await page.locator("#sso-unavailable").count(), 0, "said once, in the notice");
      // An older code in the address says how it is now, not what the code said.
      await page.goto(`${wrong.url}/login?sso_error=sso_unavailable`);
      const now = await page.locator(".notice").innerText();
      assert.match(now, /misconfigured/);
      assert.doesNotMatch(now, /not available right now/);
      await page.context().close();
    } finally {
      await wrong.dispose();
    }
  });

/**
 * A Porch of its own (its keys read again at most once a minute) with Ana, and a provider on a port of
 * its own signing with `keys`; runs `steps({porch, provider, restart, signInAsAna})` and stops both.
 * `restart(keys)` starts the provider again with other keys, as a rotation or a rebuilt provider does.
 */
async function withOwnProvider(keys, steps) {
  const own = await Porch.create();
  const port = await freePort();
  let at = null;
  try {
    await own.addAgent("admin@example.com", "Admin");
    await own.cli(["user", "add", "--email", "ana@example.com", "--name", "Ana"]);
    at = await startProvider(port, own.url, { keys });
    await own.start({
      env: {
        PORCH_OIDC_ISSUER: at.issuer,
        PORCH_OIDC_CLIENT_ID: CLIENT_ID,
        PORCH_OIDC_CLIENT_SECRET: CLIENT_SECRET,
        PORCH_OIDC_LABEL: "Sign in with Acme ID",
      },
    });
    const restart = async (next) => {
      await at.close();
      at = await startProvider(port, own.url, { keys: next });
    };
    const signInAsAna = async () => {
      const page = await newPage();
      await page.goto(`${own.url}/login`);
      await signInAtProvider(page, "ana", at);
      await page.waitForURL((u) => u.origin === own.url && u.pathname === "/inbox");
      await page.context().close();
    };
    await steps({ porch: own, restart, signInAsAna });
  } finally {
    await at?.close();
    await own.dispose();
  }
}

test("a provider that rotates its signing key is followed at once, not after the hourly refresh", { timeout: 90000 },
  async () => {
    await world();
    const [k1, k2] = [signingKey("key-1"), signingKey("key-2")];
    await withOwnProvider([k1], async ({ porch: own, restart, signInAsAna }) => {
      await signInAsAna();
      // The provider now signs with a new key, published beside the old one.
      await restart([k2, k1]);
      await signInAsAna();
      assert.match(own.log, /reading them again.*kid=key-2|kid=key-2.*reading them again/,
        "the log says it read the keys again, for the key it did not know");
    });
  });

test("a provider that makes a new key under the same key id is followed too", { timeout: 90000 }, async () => {
  await world();
  await withOwnProvider([signingKey("key-1")], async ({ porch: own, restart, signInAsAna }) => {
    await signInAsAna();
    // Rebuilt with a fresh key of the same id: the signature no longer checks with the key Porch holds.
    await restart([signingKey("key-1")]);
    await signInAsAna();
    assert.match(own.log, /whose signature the provider's keys, as last read, do not check/);
  });
});
