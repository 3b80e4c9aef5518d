// Languages (docs/widget.md, "Languages"): the panel speaks the browser's language, a site's fixed language
// wins over it, Arabic mirrors the panel, a failed translation falls back to English without an error, and
// only the chosen language's file is fetched, after the click. Attachments, business hours and the pre-chat
// form speak it too.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { fixture, hostOrigin, hostPage, signIn, watch, waitFor } from "./harness.js";

const ADMIN = { email: "a@example.com", name: "Ana" };
const world = fixture({ agent: ADMIN, email: true });
// Every host page this file starts, closed at the end: an open one keeps the test process alive.
const hosts = [];
after(async () => { for (const host of hosts) await host.close(); });

/** A site and a host page on its own origin; `config` is added to the snippet's settings object. */
async function site(name, config = {}) {
  const origin = await hostOrigin();
  const added = await world.porch.addSite(name, origin);
  const extra = Object.entries(config).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)},`).join("");
  const snippet = added.snippet.replace(')({"', `)({${extra}"`);
  const host = await hostPage(origin, snippet);
  hosts.push(host);
  return { host, origin, key: added.key };
}

/** A visitor whose browser prefers `locale`, with the panel open and connected. */
async function open(host, locale, prepare = async () => {}) {
  const context = await world.browser.newContext({ locale, viewport: { width: 1000, height: 760 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  await prepare(context);
  const seen = watch(page, world.porch.url);
  await page.goto(host.url);
  const before = seen.requests.length;
  await page.locator("[data-porch=launcher]").click();
  await waitFor("the widget to connect", async () =>
    (await page.locator("[data-porch=status]").getAttribute("data-state")) === "connected");
  return { page, context, seen, before };
}

const ui = (page) => page.evaluate(() => {
  const root = document.getElementById("porch-chat").shadowRoot;
  const panel = root.querySelector("[data-porch=panel]");
  return { lang: panel.lang, dir: panel.dir, direction: getComputedStyle(panel).direction,
    status: root.querySelector("[data-porch=status]").textContent,
    placeholder: root.querySelector("[data-porch=input]").placeholder,
    send: root.querySelector("[data-porch=send]").textContent };
});

async function say(page, text) {
  await page.locator("[data-porch=input]").fill(text);
  await page.locator("[data-porch=input]").press("Enter");
  await page.locator("[data-porch=message][data-author=visitor][data-status=sent]").last().waitFor();
}

test("a German browser sees German, with dates written the German way, and fetches de.json alone after the click",
  { timeout: 60000 }, async () => {
    const { host } = await site("Sprachen");
    const v = await open(host, "de-DE");
    try {
      assert.equal(v.before, 0, "a request before the click");
      assert.deepEqual(await ui(v.page), { lang: "de", dir: "ltr", direction: "ltr", status: "Verbunden",
        placeholder: "Nachricht schreiben\u2026", send: "Senden" });
      const locales = v.seen.requests.filter((u) => u.includes("/widget/locales/"));
      assert.deepEqual(locales, [`${world.porch.url}/widget/locales/de.json`]);
      await say(v.page, "Hallo");
      const meta = await v.page.locator("[data-porch=message][data-author=visitor] .meta").evaluate((m) => {
        const t = m.querySelector("time");
        const at = new Date(t.getAttribute("datetime"));
        return { text: m.textContent, time: t.textContent, title: t.title,
          wantTime: at.toLocaleTimeString("de-DE", { timeStyle: "short" }),
          wantTitle: at.toLocaleString("de-DE", { dateStyle: "full", timeStyle: "short" }) };
      });
      assert.equal(meta.text, `${meta.wantTime} \u00b7 Gesendet`, JSON.stringify(meta));
      assert.match(meta.time, /^\d\d:\d\d$/, "German times have 24 hours");
      assert.equal(meta.title, meta.wantTitle);
      // The data menu is translated too.
      await v.page.locator("[data-porch=data-button]").click();
      assert.equal(await v.page.locator("[data-porch=erase]").textContent(), "Meine Daten l\u00f6schen");
      assert.deepEqual(v.seen.errors, []);
    } finally {
      await v.context.close();
    }
  });

test("the site page's greetings in other languages and fixed language reach the panel", { timeout: 90000 },
  async () => {
    const { porch, browser } = world;
    const origin = await hostOrigin();
    const { key } = await porch.addSite("Polyglot", origin);
    const admin = await browser.newContext();
    const page = await admin.newPage();
    page.setDefaultTimeout(15000);
    // Saves the site's language settings on its page and returns the snippet shown after saving.
    const save = async (language, greetings) => {
      await page.goto(`${porch.url}/sites/${key}`);
      await page.getByLabel("Widget language").selectOption({ label: language });
      await page.getByLabel("Greetings in other languages").fill(greetings);
      await Promise.all([page.waitForURL(/notice=/), page.getByRole("button", { name: "Save changes" }).click()]);
      return page.locator("#snippet").inputValue();
    };
    let host = null;
    try {
      await signIn(page, porch, ADMIN.email);
      host = await hostPage(origin, await save("Automatic: the visitor's browser language",
        "de: Hallo aus <b>Berlin</b>!\nfr: Bonjour de Paris !"));
      let v = await open(host, "de-DE");
      const greeting = (page) => page.locator("[data-porch=greeting]").innerText();
      assert.equal(await greeting(v.page), "Hallo aus <b>Berlin</b>!");
      assert.equal((await ui(v.page)).status, "Verbunden");
      await v.context.close();
      v = await open(host, "es-ES");
      assert.equal(await greeting(v.page), "Hi! How can we help?", "another language gets the greeting");
      await v.context.close();

      const snippet = await save("Fran\u00e7ais", "fr: Bonjour de Paris !");
      assert.match(snippet, /"locale":"fr"/);
      await host.close();
      host = await hostPage(origin, snippet);
      v = await open(host, "de-DE");
      const got = await ui(v.page);
      assert.equal(got.lang, "fr", "the site's language did not win over the browser's");
      assert.equal(got.status, "Connect\u00e9");
      assert.equal(await greeting(v.page), "Bonjour de Paris !");
      assert.equal(await v.page.locator("[data-porch=launcher]").getAttribute("aria-label"), "Discutons");
      // Said in its own language, whatever the host page's (it took the page's).
      assert.equal(await v.page.locator("[data-porch=launcher]").getAttribute("lang"), "fr");
      await v.context.close();
    } finally {
      await host?.close();
      await admin.close();
    }
  });

test("a German visitor reads the attach button, an upload refusal, the pre-chat form and the away notice in German",
  { timeout: 120000 }, async () => {
    const { porch, browser } = world;
    const { host, key } = await site("Dateien");
    await porch.turnOnEmail(key); // the panel asks for an address only when replies can be mailed
    const admin = await browser.newContext();
    const page = await admin.newPage();
    page.setDefaultTimeout(15000);
    let v = null;
    try {
      // Closed all day but for an hour starting two hours from now (UTC), so the away notice shows.
      await signIn(page, porch, ADMIN.email);
      await page.goto(`${porch.url}/sites/${key}/hours`);
      await page.getByLabel("Time zone").fill("UTC");
      const start = (new Date().getUTCHours() + 2) % 24;
      const span = [start, (start + 1) % 24].map((h) => `${String(h).padStart(2, "0")}:00`).join("-");
      for (const day of ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]) {
        await page.getByLabel(day, { exact: true }).fill(span);
      }
      await page.locator("input[name=out_of_hours][value=email]").check();
      await page.getByRole("button", { name: "Save hours" }).click();
      await page.getByText("Business hours saved.").waitFor();
      await page.goto(`${porch.url}/sites/${key}/prechat`);
      await page.locator("input[name=name_field][value=required]").check();
      await page.locator("input[name=email_field][value=optional]").check();
      await page.getByRole("button", { name: "Save form" }).click();
      await page.getByText("Pre-chat form saved.").waitFor();
      assert.equal((await porch.api("PUT", `/sites/${key}/attachments`, { max_bytes: 2048 })).status, 200);

      v = await open(host, "de-DE");
      const attach = v.page.locator("[data-porch=attach]");
      assert.equal(await attach.getAttribute("aria-label"), "Dateien anh\u00e4ngen");
      // The site's own away message comes first, as written; then the panel's words.
      assert.match(await v.page.locator("[data-porch=away] p").last().innerText(),
        /^Wir sind (am (Montag|Dienstag|Mittwoch|Donnerstag|Freitag|Samstag|Sonntag) )?um \d\d:\d\d wieder da\.$/);
      assert.match(await v.page.locator("[data-porch=email] label").innerText(), /^Wir sind gerade nicht da\./);
      const form = v.page.locator("[data-porch=prechat]");
      assert.deepEqual(await form.locator("label").allInnerTexts(), ["Ihr Name", "Ihre E-Mail-Adresse (optional)"]);
      await v.page.locator("[data-porch=input]").fill("Hallo");
      await v.page.locator("[data-porch=input]").press("Enter");
      await v.page.locator("[data-porch=error]").waitFor({ state: "visible" });
      assert.equal(await v.page.locator("[data-porch=error]").innerText(), "Bitte f\u00fcllen Sie die Pflichtfelder aus.");

      const [chooser] = await Promise.all([v.page.waitForEvent("filechooser"), attach.click()]);
      await chooser.setFiles([{ name: "gross.txt", mimeType: "text/plain", buffer: Buffer.alloc(5000, "a") }]);
      const chip = v.page.locator("[data-porch=chip][data-state=failed]");
      await chip.waitFor();
      assert.equal(await chip.locator(".note").innerText(), "Zu gro\u00df: Dateien d\u00fcrfen h\u00f6chstens 2 KB gro\u00df sein.");
      assert.equal(await chip.getByRole("button").getAttribute("aria-label"), "gross.txt entfernen");
      assert.deepEqual(v.seen.errors, []);
    } finally {
      await v?.context.close();
      await admin.close();
      await host.close();
    }
  });

test("a fixed language added to the snippet by hand wins over the browser's", { timeout: 60000 }, async () => {
  const { host } = await site("Langue", { locale: "fr" });
  const v = await open(host, "de-DE");
  try {
    const got = await ui(v.page);
    assert.equal(got.lang, "fr");
    assert.equal(got.status, "Connect\u00e9");
    assert.equal(got.send, "Envoyer");
  } finally {
    await v.context.close();
  }
});

test("the browser's first supported language is chosen, matched on the language alone", { timeout: 60000 },
  async () => {
    const { host } = await site("Portugues");
    const v = await open(host, "pt-BR");
    try {
      const got = await ui(v.page);
      assert.equal(got.lang, "pt");
      assert.equal(got.status, "Conectado");
      assert.equal(got.placeholder, "Escreva uma mensagem\u2026");
    } finally {
      await v.context.close();
    }
  });

test("an Arabic browser gets a right-to-left panel with the visitor's messages on the left", { timeout: 60000 },
  async () => {
    const { host } = await site("Arabic");
    const v = await open(host, "ar-EG");
    try {
      const got = await ui(v.page);
      assert.equal(got.lang, "ar");
      assert.equal(got.dir, "rtl");
      assert.equal(got.direction, "rtl");
      assert.equal(got.send, "\u0625\u0631\u0633\u0627\u0644");
      // The empty box starts at the right (dir="auto" alone would take left to right), and the site's
      // own name keeps its full stop at its end (dir="auto").
      const dirs = await v.page.evaluate(() => {
        const root = document.getElementById("porch-chat").shadowRoot;
        return [getComputedStyle(root.querySelector("[data-porch=input]")).direction,
          root.querySelector("#porch-title").dir];
      });
      assert.deepEqual(dirs, ["rtl", "auto"]);
      await say(v.page, "\u0645\u0631\u062d\u0628\u0627");
      // A reply behind the closed panel: the launcher's name is Arabic whole, in Arabic, not "Chat with
      // us" with an Arabic "(new reply)" read in an English voice; read, it is English again.
      const launcher = v.page.locator("[data-porch=launcher]");
      await v.page.locator("[data-porch=input]").press("Escape");
      const { body: list } = await world.porch.api("GET", "/conversations");
      const id = list.conversations[0].id;
      assert.equal((await world.porch.api("POST", `/conversations/${id}/messages`, { body: "Hi" })).status, 201);
      await waitFor("the launcher's new name", async () =>
        (await launcher.getAttribute("data-unread")) === "");
      assert.deepEqual([await launcher.getAttribute("lang"), await launcher.getAttribute("aria-label")],
        ["ar", "\u062a\u062d\u062f\u0651\u062b \u0645\u0639\u0646\u0627 (\u0631\u062f \u062c\u062f\u064a\u062f)"]);
      await launcher.click();
      await v.page.locator("[data-porch=panel]").waitFor();
      assert.deepEqual([await launcher.getAttribute("lang"), await launcher.getAttribute("aria-label")],
        ["en", "Chat with us"]);
      const box = await v.page.evaluate(() => {
        const root = document.getElementById("porch-chat").shadowRoot;
        const panel = root.querySelector("[data-porch=panel]").getBoundingClientRect();
        const bubble = root.querySelector("[data-porch=message][data-author=visitor] .bubble")
          .getBoundingClientRect();
        const close = root.querySelector(".head .close").getBoundingClientRect();
        return { panelLeft: panel.left, panelRight: panel.right, bubbleLeft: bubble.left, bubbleRight: bubble.right,
          closeLeft: close.left };
      });
      const middle = (box.panelLeft + box.panelRight) / 2;
      assert.ok(box.bubbleLeft - box.panelLeft < 40 && box.bubbleRight < middle, JSON.stringify(box));
      assert.ok(box.closeLeft < middle, `the close button is not mirrored: ${JSON.stringify(box)}`);
    } finally {
      await v.context.close();
    }
  });

test("the launcher takes its label's direction, not the page's: English on a right-to-left page, Arabic on any",
  { timeout: 60000 }, async () => {
    const english = await site("Launcher on RTL");
    // The site's own label, as an owner writes it on the site page (the snippet carries it).
    const origin = await hostOrigin();
    const added = await world.porch.addSite("Arabic label", origin);
    const label = JSON.stringify("\u062a\u062d\u062f\u062b \u0645\u0639\u0646\u0627");
    const snippet = added.snippet.replace(/"label":"[^"]*"/, `"label":${label}`);
    assert.notEqual(snippet, added.snippet, "the snippet carries a label");
    const arabic = { host: await hostPage(origin, snippet) };
    hosts.push(arabic.host);
    const context = await world.browser.newContext({ locale: "en-US" });
    try {
      const page = await context.newPage();
      const launcher = async (url, pageDir) => {
        await page.goto(url);
        await page.evaluate((dir) => { document.documentElement.dir = dir; }, pageDir);
        return page.locator("[data-porch=launcher]").evaluate((b) => ({
          direction: getComputedStyle(b).direction,
          iconFirst: b.querySelector("svg").getBoundingClientRect().left < b.querySelector("span").getBoundingClientRect().left,
        }));
      };
      assert.deepEqual(await launcher(english.host.url, "rtl"), { direction: "ltr", iconFirst: true });
      assert.deepEqual(await launcher(arabic.host.url, "ltr"), { direction: "rtl", iconFirst: false });
    } finally {
      await context.close();
    }
  });

test("a translation that cannot be fetched leaves the panel in English, without an error", { timeout: 60000 },
  async () => {
    const { host } = await site("Offline texts");
    let asked = 0;
    const v = await open(host, "de-DE", (context) => context.route("**/widget/locales/**", (route) => {
      asked += 1;
      return route.abort();
    }));
    try {
      assert.equal(asked, 1, "the German file was not asked for");
      const got = await ui(v.page);
      assert.equal(got.status, "Connected");
      assert.equal(got.send, "Send");
      assert.equal(got.lang, "en", "the panel is marked as the language its texts are in");
      await say(v.page, "Hello");
      assert.deepEqual(v.seen.errors, []);
    } finally {
      await v.context.close();
    }
  });

test("an English browser fetches no translation", { timeout: 60000 }, async () => {
  const { host } = await site("English");
  const v = await open(host, "en-GB");
  try {
    const got = await ui(v.page);
    assert.equal(got.lang, "en");
    assert.equal(got.status, "Connected");
    assert.deepEqual(v.seen.requests.filter((u) => u.includes("/widget/locales/")), []);
  } finally {
    await v.context.close();
  }
});

test("on a phone, a long placeholder (German, French, Spanish, Portuguese) stays on one line",
  { timeout: 90000 }, async () => {
    const { host } = await site("Phone");
    // The box's scroll height with each placeholder; English's short one is the one-line height.
    const heights = {};
    for (const locale of ["en-GB", "de-DE", "fr-FR", "es-ES", "pt-BR"]) {
      const v = await open(host, locale);
      try {
        await v.page.setViewportSize({ width: 360, height: 740 });
        heights[locale] = await v.page.locator("[data-porch=input]").evaluate((el) =>
          `${el.scrollHeight} px: ${el.placeholder}`);
      } finally {
        await v.context.close();
      }
    }
    const oneLine = parseInt(heights["en-GB"], 10);
    for (const [locale, height] of Object.entries(heights)) {
      assert.equal(parseInt(height, 10), oneLine, `${locale} ${height}, English ${heights["en-GB"]}`);
    }
  });

test("an American browser writes a short time as it does elsewhere: 6:05 AM, not 06:05 AM",
  { timeout: 60000 }, async () => {
    const { host } = await site("American");
    // A zone where the hour is now 1 to 9 on a 12-hour clock, where a padded hour would show.
    const zones = ["Pacific/Honolulu", "America/Los_Angeles", "America/New_York", "UTC", "Europe/Berlin",
      "Asia/Dubai", "Asia/Kolkata", "Asia/Bangkok", "Asia/Tokyo", "Australia/Sydney", "Pacific/Auckland"];
    const hourIn = (timeZone) => Number(new Intl.DateTimeFormat("en-US", { timeZone, hour: "numeric",
      hour12: true }).formatToParts(new Date()).find((p) => p.type === "hour").value);
    const timezoneId = zones.find((zone) => hourIn(zone) >= 1 && hourIn(zone) <= 8);
    assert.ok(timezoneId, "some zone has a one-digit hour now");
    const context = await world.browser.newContext({ locale: "en-US", timezoneId });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(15000);
      await page.goto(host.url);
      await page.locator("[data-porch=launcher]").click();
      await say(page, "Hello");
      const time = await page.locator("[data-porch=message][data-author=visitor] .meta time").textContent();
      assert.match(time, /^[1-9]:\d\d\s?[AP]M$/, `${time} in ${timezoneId}`);
    } finally {
      await context.close();
    }
  });
