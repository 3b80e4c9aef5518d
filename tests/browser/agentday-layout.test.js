// Phones and dark mode: no admin page scrolls sideways at 360 and 390 px; the admin UI and the
// widget panel follow prefers-color-scheme; the main text/background pairs meet WCAG AA (4.5:1)
// in both schemes, measured on the rendered pages (including the widget's status line on the
// site colour and the 403 page's error code).
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, visitor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
// Long names without spaces are what pushed the assignee filter, headings and tables wide.
const WORKER = { email: "bo@example.com", name: `Bo ${"Featherstonehaugh-".repeat(3)}Smythe` };
const LONG_EMAIL = `l${"o".repeat(60)}ng@example.com`;
let conversationId;
let visitorId;
const world = fixture({ site: "Acme Shop", agent: AGENT }, async ({ porch, browser, host, site }) => {
  // A webhook endpoint with a long URL, listed on the site's webhooks page (a loopback address,
  // so the server is started again allowing it; nothing listens there and nothing is sent, as
  // it hears only of closed conversations).
  await porch.stop();
  await porch.start({ env: { PORCH_ALLOW_PRIVATE_NETWORKS: "1" } });
  const hook = await porch.api("POST", `/sites/${site.key}/integrations/webhooks`,
    { url: `http://127.0.0.1:9/${"y".repeat(150)}`, events: ["conversation.closed"] });
  assert.equal(hook.status, 201, JSON.stringify(hook.body));
  await porch.cli(["user", "add", "--email", WORKER.email, "--name", WORKER.name, "--role", "agent",
    "--password-stdin"], { input: "correct horse battery staple\n" });
  const v = await visitor(browser, host.url);
  // Long words and links are what pushed bubbles wide.
  await v.say(`Look: https://example.com/${"a".repeat(120)}?q=${"b".repeat(60)} and ${"x".repeat(90)}`);
  // The visitor leaves a long address (the offline email frame), shown as their name everywhere.
  await v.page.evaluate(async ({ server, siteKey, email }) => {
    const token = localStorage.getItem(`porch:${siteKey}:token`);
    const ws = new WebSocket(`${server.replace("http", "ws")}/widget/ws?site=${siteKey}`);
    await new Promise((resolve, reject) => {
      ws.onopen = () => ws.send(JSON.stringify({ type: "hello", v: 1, token }));
      ws.onmessage = (e) => {
        const f = JSON.parse(e.data);
        if (f.type === "welcome") ws.send(JSON.stringify({ type: "email", email }));
        else if (f.type === "email_saved" || f.type === "error") resolve(f);
      };
      ws.onerror = reject;
    });
    ws.close();
  }, { server: porch.url, siteKey: site.key, email: LONG_EMAIL });
  await v.context.close();
  const list = await porch.api("GET", "/conversations");
  const first = list.body.conversations?.[0] ?? list.body[0];
  conversationId = first?.id;
  visitorId = first?.visitor_id;
});

/** The admin pages an admin can open (the site's pages by its key). */
const adminPages = (site) => ["/inbox", `/conversations/${conversationId}`, "/account", "/sites", "/sites/new",
  `/sites/${site.key}`, `/sites/${site.key}/delete`, `/sites/${site.key}/slack`, `/sites/${site.key}/discord`,
  `/sites/${site.key}/webhooks`, `/sites/${site.key}/email`, "/account/two-factor", "/privacy",
  "/deliveries", "/team", "/capacity", "/capacity?range=24h", "/audit", "/no-such-page",
  `/privacy?q=v${visitorId}`, `/privacy/visitors/${visitorId}/erase`, `/search?q=${LONG_EMAIL}`,
  // The docs: the widest tables and code blocks (each scrolls on its own, the page does not).
  "/docs", "/docs/widget-protocol.md", "/docs/configuration.md", "/docs/capacity.md"];

test("an admin's top bar is one row on a 1280 px laptop", { timeout: 60000 }, async () => {
  const { porch, browser } = world;
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await signIn(page, porch, AGENT.email);
  await page.goto(`${porch.url}/inbox`);
  const tops = await page.locator(".topbar nav a, .topbar .account > *").evaluateAll(
    (items) => [...new Set(items.filter((el) => el.offsetParent).map((el) => Math.round((el.getBoundingClientRect().top + el.getBoundingClientRect().height / 2) / 20)))]);
  assert.equal(tops.length, 1, `the bar's items sit on one row: rows at ${tops}`);
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), 1280);
  await context.close();
});

test("in the docs only the boxes that scroll sideways are tab stops and named regions", { timeout: 60000 }, async () => {
  const { porch, browser } = world;
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await signIn(page, porch, AGENT.email);
  await page.goto(`${porch.url}/docs/configuration.md`);
  const boxes = () => page.locator(".doc-scroll").evaluateAll((all) => all.map((box) => ({
    scrolls: box.scrollWidth > box.clientWidth + 1,
    stop: box.getAttribute("tabindex") === "0" && box.getAttribute("role") === "region" && !!box.getAttribute("aria-label"),
    bare: !box.hasAttribute("tabindex") && !box.hasAttribute("role") && !box.hasAttribute("aria-label"),
  })));
  const wide = await boxes();
  assert.ok(wide.some((b) => !b.scrolls), "some fit at 1280 px");
  assert.ok(wide.every((b) => (b.scrolls ? b.stop : b.bare)), JSON.stringify(wide));
  // Narrower, more of them scroll, and each one that does becomes a tab stop.
  await page.setViewportSize({ width: 360, height: 780 });
  await page.waitForFunction(() => [...document.querySelectorAll(".doc-scroll")]
    .every((b) => (b.scrollWidth > b.clientWidth + 1) === (b.getAttribute("tabindex") === "0")));
  const narrow = await boxes();
  assert.ok(narrow.filter((b) => b.stop).length > wide.filter((b) => b.stop).length);
  await context.close();
});

for (const width of [360, 390]) {
  test(`no admin page scrolls sideways at ${width} px`, { timeout: 120000 }, async () => {
    const { porch, browser, site } = world;
    // Not isMobile: a mobile viewport would zoom out to fit a too-wide page and hide the overflow.
    const context = await browser.newContext({ viewport: { width, height: 780 }, hasTouch: true });
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    const measure = async (path) => {
      await page.goto(`${porch.url}${path}`);
      const { scroll, inner, past, unreachable } = await page.evaluate(() => ({
        scroll: document.documentElement.scrollWidth,
        inner: innerWidth,
        // Boxes that scroll sideways: Tab must reach each (or something in it), or a keyboard
        // cannot scroll it (axe's scrollable-region-focusable).
        unreachable: [...document.body.querySelectorAll("*")]
          .filter((el) => el.scrollWidth > el.clientWidth + 1 && ["auto", "scroll"].includes(getComputedStyle(el).overflowX))
          .filter((el) => el.tabIndex < 0 && !el.querySelector("a[href], button, input, select, textarea, [tabindex]:not([tabindex='-1'])"))
          .slice(0, 3)
          .map((el) => `${el.tagName.toLowerCase()}.${el.className}: ${el.textContent.slice(0, 40)}`),
        // What sticks out, to name in a failure: the innermost elements past the right edge.
        past: [...document.body.querySelectorAll("*")]
          .filter((el) => el.getBoundingClientRect().right > innerWidth + 0.5 && !el.querySelector("*"))
          .slice(0, 3)
          .map((el) => `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}.${el.className} (${Math.round(el.getBoundingClientRect().right)} px)`),
      }));
      assert.equal(inner, width);
      return scroll > inner ? { path, scroll, inner, past, unreachable } : { path, scroll, inner, unreachable };
    };
    const wide = [];
    const unreachable = [];
    const check = (m) => {
      if (m.scroll > m.inner) wide.push(m);
      if (m.unreachable.length) unreachable.push({ path: m.path, boxes: m.unreachable });
    };
    check(await measure("/login"));
    check(await measure("/password-resets"));
    await signIn(page, porch, AGENT.email);
    for (const path of adminPages(site)) check(await measure(path));
    // The 403 page, as an agent.
    await signIn(page, porch, WORKER.email);
    check(await measure("/team"));
    assert.deepEqual(wide, [], `pages wider than ${width} px`);
    assert.deepEqual(unreachable, [], `boxes that scroll sideways but Tab cannot reach at ${width} px`);
    await context.close();
  });
}

test("on a phone the inbox starts with its conversations and the bar keeps its place", { timeout: 90000 }, async () => {
  const { porch, browser } = world;
  const context = await browser.newContext({ viewport: { width: 360, height: 780 }, hasTouch: true });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, AGENT.email);
  await page.goto(`${porch.url}/inbox`);
  // The first row is on the first screen, with room to read it (it was at 740 px of 780).
  const row = await page.locator("#conversations li").first().boundingBox();
  assert.ok(row.y + row.height <= 700, `the first conversation ends at ${Math.round(row.y + row.height)} px`);
  const bar = page.locator(".topbar nav");
  const one = await bar.evaluate((nav) => [...nav.children].every((a) => a.offsetTop === nav.children[0].offsetTop));
  assert.ok(one, "the navigation wraps onto several rows");
  // Far along the bar, the current section is scrolled into view.
  await page.goto(`${porch.url}/audit`);
  const shown = await bar.evaluate((nav) => {
    const box = nav.getBoundingClientRect();
    const current = nav.querySelector("[aria-current=page]").getBoundingClientRect();
    return current.left >= box.left && current.right <= box.right;
  });
  assert.ok(shown, "the current section is out of view");
  // So is the inbox's current tab, the last of its row.
  await page.goto(`${porch.url}/inbox?filter=closed`);
  await page.waitForLoadState("load");
  const tab = await page.locator("nav.tabs").evaluate((tabs) => {
    const box = tabs.getBoundingClientRect();
    const current = tabs.querySelector("[aria-current=page]").getBoundingClientRect();
    return { scrolls: tabs.scrollWidth > tabs.clientWidth, shown: current.left >= box.left && current.right <= box.right };
  });
  assert.ok(tab.shown, `the current tab is out of view (the row scrolls: ${tab.scrolls})`);

  // A colleague with a long name has the conversation: "Take over from …" wraps in the panel.
  await page.goto(`${porch.url}/conversations/${conversationId}`);
  const assign = async (label) => {
    await page.getByLabel("Assignee").selectOption({ label });
    await page.getByRole("button", { name: "Assign", exact: true }).click();
    await page.waitForLoadState();
  };
  await assign(WORKER.name);
  const over = page.getByRole("button", { name: /^Take over from / });
  await over.waitFor();
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  await assign("Nobody"); // as the tests after this one expect it
  assert.ok(width <= 360, `the page is ${width} px wide with "Take over from ${WORKER.name}"`);
  await context.close();
});

// Relative luminance and contrast, WCAG 2.x; alpha is blended over the backdrop found by
// walking up to the first opaque background (through shadow roots). Runs in the page.
function contrastOf(el) {
  const parse = (c) => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const blend = (top, under) => {
    const a = top.length > 3 ? top[3] : 1;
    return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a));
  };
  const layers = [];
  for (let n = el; n && n.nodeType === 1; n = n.parentElement || n.getRootNode().host) {
    const c = parse(getComputedStyle(n).backgroundColor);
    if (c.length && (c.length < 4 || c[3] > 0)) {
      layers.push(c);
      if (c.length < 4 || c[3] === 1) break;
    }
  }
  let bg = [255, 255, 255];
  for (const c of layers.reverse()) bg = blend(c, bg);
  const s = getComputedStyle(el);
  const color = parse(s.color);
  const fg = blend([...color.slice(0, 3), (color.length > 3 ? color[3] : 1) * Number(s.opacity)], bg);
  const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
  return { ratio: (a + 0.05) / (b + 0.05), fg: s.color, bg: `rgb(${bg.map(Math.round).join(",")})` };
}

/** Contrast of the first element matching each selector; fails if any is under 4.5:1. */
async function checkContrast(page, selectors, where, failures) {
  for (const selector of selectors) {
    const el = page.locator(selector).first();
    if (!(await el.count())) { failures.push(`${where}: ${selector} not found`); continue; }
    const r = await el.evaluate(contrastOf);
    if (r.ratio < 4.5) failures.push(`${where}: ${selector} ${r.fg} on ${r.bg} = ${r.ratio.toFixed(2)}`);
  }
}

for (const colorScheme of ["light", "dark"]) {
  test(`text contrast is AA in the ${colorScheme} scheme, admin UI and widget`, { timeout: 120000 }, async () => {
    const { porch, browser, site, host } = world;
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, colorScheme });
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    const failures = [];
    await page.goto(`${porch.url}/login`);
    await checkContrast(page, ["h1", "label", ".button-primary"], "login", failures);
    await signIn(page, porch, AGENT.email);

    const bodyBg = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    const dark = (rgb) => rgb.match(/\d+/g).slice(0, 3).map(Number).reduce((a, b) => a + b) < 150;
    assert.equal(dark(bodyBg), colorScheme === "dark", `body background ${bodyBg}`);

    await page.goto(`${porch.url}/inbox`);
    await checkContrast(page, ["h1", ".topbar nav a", ".tabs a", ".tabs a[aria-current]", ".inbox-count",
      ".conversation .visitor", ".conversation .preview", ".conversation time", ".conversation .site",
      ".conversation .assignee", "label[for=inbox-status]", "select", ".button"], "inbox", failures);
    await page.goto(`${porch.url}/conversations/${conversationId}`);
    await checkContrast(page, [".message-visitor .body", ".message-visitor .meta", ".aside h2", ".details dt",
      ".details dd", ".badge-open", ".button-primary", "textarea", ".hint", ".crumb a", ".crumb-site"], "conversation", failures);
    // The first scheme's run assigns and replies; the second finds both there.
    if (await page.getByRole("button", { name: "Assign to me" }).count()) {
      await page.getByRole("button", { name: "Assign to me" }).click();
      await page.getByLabel("Your reply").fill("Hello from Ana");
      await page.getByLabel("Your reply").press("Enter");
    }
    await page.locator(".message-system").first().waitFor();
    await page.locator(".message-agent").first().waitFor();
    await checkContrast(page, [".message-system p"], "conversation", failures);
    await checkContrast(page, [".message-agent .body"], "conversation", failures);
    await page.goto(`${porch.url}/sites/${site.key}`);
    await checkContrast(page, ["h1", "label", ".hint", "input[type=text]"], "site", failures);
    await page.goto(`${porch.url}/capacity`);
    await checkContrast(page, ["h1", ".chart-card figcaption", ".legend"], "capacity", failures);

    await signIn(page, porch, WORKER.email);
    await page.goto(`${porch.url}/team`);
    await checkContrast(page, [".error-code", "h1"], "403", failures);

    // The widget panel on the host page, in the same scheme.
    const v = await context.newPage();
    await v.goto(host.url);
    await v.locator("[data-porch=launcher]").click();
    await v.locator("[data-porch=status][data-state=connected]").waitFor();
    await v.locator("[data-porch=input]").fill("Contrast check");
    await v.locator("[data-porch=input]").press("Enter");
    await v.locator("[data-porch=message][data-status=sent]").waitFor();
    const panelBg = await v.locator("[data-porch=messages]").evaluate((el) => getComputedStyle(el).backgroundColor);
    assert.equal(dark(panelBg), colorScheme === "dark", `widget background ${panelBg}`);
    await checkContrast(v, ["[data-porch=status]", "h2", "[data-porch=greeting] .bubble",
      "[data-porch=message][data-author=visitor] .bubble", "[data-porch=message] .meta", "[data-porch=input]"],
      "widget", failures);
    assert.deepEqual(failures, []);
    await context.close();
  });
}

test("on a phone the small controls a finger must hit are at least 24 px tall", { timeout: 90000 }, async () => {
  const { porch, browser, site } = world;
  const context = await browser.newContext({ viewport: { width: 360, height: 780 }, hasTouch: true });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  await signIn(page, porch, AGENT.email);
  const small = [];
  const measure = async (path, selectors) => {
    await page.goto(`${porch.url}${path}`);
    for (const selector of selectors) {
      const heights = await page.locator(selector).evaluateAll((els) =>
        els.filter((el) => el.getClientRects().length).map((el) => el.getBoundingClientRect().height));
      assert.ok(heights.length, `${selector} on ${path}`);
      for (const h of heights) if (h < 24) small.push(`${selector} on ${path}: ${h.toFixed(1)} px`);
    }
  };
  // WCAG 2.5.8: the way back on a page, the top bar's account links, a radio's label, a disclosure.
  await measure(`/conversations/${conversationId}`, [".crumb a", ".account > a", ".ua summary"]);
  await measure("/inbox", [".conversation > .select"]);
  await measure(`/sites/${site.key}/prechat`, [".crumb a", ".radios label"]);
  assert.deepEqual(small, []);
  await context.close();
});
