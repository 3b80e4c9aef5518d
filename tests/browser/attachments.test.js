// Attachments from a real browser (docs/widget-protocol.md and docs/widget.md, "Attachments"):
// first the protocol alone (a page on the site's origin uploads a photo with the visitor token, a
// CORS request with its preflight, and sends it in a `message` frame; the agent's open
// conversation page shows it live, without the metadata the photo carried), then the panel's
// attach button, paste and drop, its tray and error words, the inbox's attach control, and the
// exactly-once resend of a message with files.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, signIn, visitor, waitFor } from "./harness.js";

const AGENT = { email: "ana@example.com", name: "Ana" };
const world = fixture({ site: "Acme", agent: AGENT });

// A valid 1×1 PNG, with a text chunk naming where it was taken spliced in before its pixels.
const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

test("a visitor's photo reaches the agent live, without its metadata", { timeout: 120000 }, async () => {
  const { porch, host, browser, site } = world;
  const ann = await visitor(browser, host.url);
  await ann.say("Here is a photo of the damage");

  const agentContext = await browser.newContext();
  const agent = await agentContext.newPage();
  agent.setDefaultTimeout(15000);
  await signIn(agent, porch, AGENT.email);
  await agent.goto(`${porch.url}/inbox`);
  await agent.locator("#conversations li", { hasText: "photo of the damage" }).locator("a").click();
  await agent.waitForURL(/\/conversations\/\d+/);

  const sent = await ann.page.evaluate(async ({ server, siteKey, pixel }) => {
    const bytes = Uint8Array.from(atob(pixel), (c) => c.charCodeAt(0));
    const text = new TextEncoder().encode("tEXtLocation\0Secret Street 7");
    // CRC-32 of the chunk's type and data: a chunk with a wrong one is damage (422).
    const crc32 = (data) => {
      let crc = 0xffffffff;
      for (const byte of data) {
        let c = (crc ^ byte) & 0xff;
        for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
        crc = (crc >>> 8) ^ c;
      }
      return (crc ^ 0xffffffff) >>> 0;
    };
    const chunk = new Uint8Array(12 + text.length - 4);
    new DataView(chunk.buffer).setUint32(0, text.length - 4);
    chunk.set(text, 4);
    new DataView(chunk.buffer).setUint32(chunk.length - 4, crc32(text));
    const png = new Uint8Array(bytes.length + chunk.length);
    png.set(bytes.subarray(0, 33)); // signature and IHDR
    png.set(chunk, 33);
    png.set(bytes.subarray(33), 33 + chunk.length);
    const token = localStorage.getItem(`porch:${siteKey}:token`);
    const res = await fetch(`${server}/widget/attachments?site=${siteKey}&name=damage.png`, {
      method: "POST", body: png, headers: { authorization: `Bearer ${token}` },
    });
    const file = await res.json();
    if (res.status !== 201) return { status: res.status, file };
    const ws = new WebSocket(`${server.replace("http", "ws")}/widget/ws?site=${siteKey}`);
    const ack = await new Promise((resolve, reject) => {
      ws.onopen = () => ws.send(JSON.stringify({ type: "hello", v: 1, token }));
      ws.onmessage = (e) => {
        const f = JSON.parse(e.data);
        if (f.type === "welcome") {
          ws.send(JSON.stringify({ type: "message", client_id: "photo-1", body: "", attachments: [file.id] }));
        } else if (f.type === "ack" || f.type === "error") resolve(f);
      };
      ws.onerror = reject;
    });
    ws.close();
    const back = await fetch(`${server}${file.url}?site=${siteKey}`, { headers: { authorization: `Bearer ${token}` } });
    const served = new TextDecoder().decode(await back.arrayBuffer());
    return { status: res.status, file, ack, servedStatus: back.status, hasSecret: served.includes("Secret Street") };
  }, { server: porch.url, siteKey: site.key, pixel: PIXEL });

  assert.equal(sent.status, 201, JSON.stringify(sent));
  assert.equal(sent.file.type, "image/png");
  assert.equal(sent.ack.type, "ack", JSON.stringify(sent.ack));
  assert.equal(sent.servedStatus, 200);
  assert.equal(sent.hasSecret, false, "the text chunk was stripped");

  const image = agent.locator(".message-visitor .attachment-image img");
  await image.waitFor();
  assert.match(await image.getAttribute("alt"), /^damage\.png \(\d+ bytes\)$/);
  await waitFor("the image to load with the agent's session", () =>
    image.evaluate((img) => img.complete && img.naturalWidth === 1));
  await agentContext.close();
  await ann.context.close();
});

// --- The panel's own attach button, paste and tray (docs/widget.md, "Attachments").

// A PDF the server accepts (it sniffs `%PDF-`), and a valid 1×1 PNG.
const PDF = Buffer.from("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n");
const png = () => Buffer.from(PIXEL, "base64");
const own = (page) => page.locator("[data-porch=message][data-author=visitor]");

/** Picks files the way a visitor does: the attach button opens the file chooser. */
async function pick(page, files) {
  const [chooser] = await Promise.all([page.waitForEvent("filechooser"), page.locator("[data-porch=attach]").click()]);
  await chooser.setFiles(files);
}

/** Waits until every chip in the tray says it is ready to send. */
async function uploaded(page, count) {
  const chips = page.locator("[data-porch=chip]");
  await waitFor(`${count} uploads`, async () => (await chips.count()) === count
    && (await page.locator("[data-porch=chip][data-state=done]").count()) === count);
}

/** The visitor's messages of the site's conversation that holds a message with `text`. */
async function visitorMessages(porch, siteKey, text) {
  const { body } = await porch.api("GET", "/conversations");
  for (const conv of body.conversations.filter((c) => c.site === siteKey)) {
    const { body: list } = await porch.api("GET", `/conversations/${conv.id}/messages`);
    if (list.messages.some((m) => m.body === text)) return list.messages.filter((m) => m.author === "visitor");
  }
  return [];
}

test("a visitor attaches an image and a PDF and pastes an image; the agent sees them live and answers with a file",
  { timeout: 120000 }, async () => {
    const { porch, host, browser } = world;
    const ann = await visitor(browser, host.url);
    await ann.say("Files for you");
    const agentContext = await browser.newContext();
    const agent = await agentContext.newPage();
    agent.setDefaultTimeout(15000);
    await signIn(agent, porch, AGENT.email);
    await agent.goto(`${porch.url}/inbox`);
    await agent.locator("#conversations li", { hasText: "Files for you" }).locator("a").click();
    await agent.waitForURL(/\/conversations\/\d+/);

    const page = ann.page;
    const attach = page.locator("[data-porch=attach]");
    assert.equal(await attach.getAttribute("aria-label"), "Attach files");
    await pick(page, [{ name: "photo.png", mimeType: "image/png", buffer: png() },
      { name: "invoice.pdf", mimeType: "application/pdf", buffer: PDF }]);
    // Pasting an image from the clipboard adds it to the same tray.
    await page.locator("[data-porch=input]").evaluate((input, b64) => {
      const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
      const data = new DataTransfer();
      data.items.add(new File([bytes], "image.png", { type: "image/png" }));
      input.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    }, PIXEL);
    await uploaded(page, 3);
    assert.deepEqual(await page.locator("[data-porch=chip] .fname").allInnerTexts(),
      ["photo.png", "invoice.pdf", "image.png"]);
    await page.locator("[data-porch=input]").fill("Here they are");
    await page.locator("[data-porch=input]").press("Enter");
    const mine = own(page).filter({ hasText: "Here they are" });
    await mine.and(page.locator("[data-id]")).waitFor(); // stored ("Seen" at once: the agent has it open)
    assert.equal(await page.locator("[data-porch=chips]").isHidden(), true, "the tray empties once sent");
    // The visitor sees their own files: images loaded with the token, the PDF as a link with name and size.
    await waitFor("the visitor's images to load", () => mine.locator("[data-porch=file-image] img").evaluateAll(
      (imgs) => imgs.length === 2 && imgs.every((img) => img.complete && img.naturalWidth === 1)));
    assert.match(await mine.locator("[data-porch=file]").innerText(), /^invoice\.pdf \(\d+ bytes\)$/);

    const stored = await visitorMessages(porch, world.site.key, "Files for you");
    assert.equal(stored.length, 2, JSON.stringify(stored));
    // The agent's open conversation shows all three live.
    const shown = agent.locator(".message-visitor", { hasText: "Here they are" });
    await shown.waitFor();
    const thumbs = shown.locator(".attachment-image img");
    assert.equal(await thumbs.count(), 2);
    assert.match(await thumbs.first().getAttribute("src"), /\/attachments\/att_\w+\/thumbnail$/);
    assert.match(await shown.locator(".attachment-image a").first().getAttribute("href"), /\/attachments\/att_\w+$/);
    await waitFor("the agent's thumbnails to load", () =>
      thumbs.evaluateAll((imgs) => imgs.every((img) => img.complete && img.naturalWidth === 1)));
    assert.match(await shown.locator(".attachment a", { hasText: "invoice.pdf" }).innerText(), /invoice\.pdf/);

    // The agent answers with a file from the reply box (no text needed); the visitor sees it live.
    const [chooser] = await Promise.all([agent.waitForEvent("filechooser"),
      agent.getByText("Attach files", { exact: true }).click()]);
    await chooser.setFiles([{ name: "manual.pdf", mimeType: "application/pdf", buffer: PDF }]);
    await agent.locator("#reply-files li", { hasText: "ready" }).waitFor();
    await agent.getByRole("button", { name: "Send reply" }).click();
    await agent.locator(".message-agent .attachment a", { hasText: "manual.pdf" }).waitFor();
    assert.equal(await agent.locator("#reply-files").isHidden(), true, "the tray empties once sent");
    const answer = page.locator("[data-porch=message][data-author=agent]").filter({ has: page.locator("[data-porch=file]") });
    await answer.waitFor();
    assert.match(await answer.locator("[data-porch=file]").innerText(), /^manual\.pdf \(\d+ bytes\)$/);
    // A click downloads it with the visitor's token.
    const [download] = await Promise.all([page.waitForEvent("download"), answer.locator("[data-porch=file]").click()]);
    assert.equal(download.suggestedFilename(), "manual.pdf");
    await agentContext.close();
    await ann.context.close();
  });

test("a file over the site's limit says so in words and sends nothing", { timeout: 120000 }, async () => {
  const { porch, host, browser, site } = world;
  const set = await porch.api("PUT", `/sites/${site.key}/attachments`, { max_bytes: 2048 });
  assert.equal(set.status, 200, JSON.stringify(set));
  try {
    const ann = await visitor(browser, host.url);
    const page = ann.page;
    await ann.say("About a big file");
    // One byte over: its size reads above the limit (rounded up), the limit as it is (rounded down).
    // A long name is cut with an ellipsis: the chip, its words and Remove stay in the tray.
    const name = "a-scan-of-the-broken-parcel-with-a-very-long-file-name-2026.txt";
    await pick(page, [{ name, mimeType: "text/plain", buffer: Buffer.alloc(2049, "a") }]);
    const chip = page.locator("[data-porch=chip]");
    await chip.and(page.locator("[data-state=failed]")).waitFor();
    assert.match(await chip.innerText(), /Too big: files can be at most 2 KB\./);
    assert.match(await chip.locator(".size").innerText(), /^3 KB$/);
    const tray = await page.locator("[data-porch=chips]").boundingBox();
    const remove = await chip.getByRole("button", { name: `Remove ${name}` }).boundingBox();
    assert.ok(remove.x + remove.width <= tray.x + tray.width, `Remove at ${remove.x}, tray ends ${tray.x + tray.width}`);
    await page.locator("[data-porch=send]").click();
    assert.equal(await own(page).count(), 1, "nothing more was sent");
    // Removing it empties the tray; a small file then goes through.
    await chip.getByRole("button", { name: `Remove ${name}` }).click();
    assert.equal(await chip.count(), 0);
    await pick(page, [{ name: "note.txt", mimeType: "text/plain", buffer: Buffer.from("s") }]);
    await uploaded(page, 1);
    await page.locator("[data-porch=send]").click();
    await own(page).nth(1).and(page.locator("[data-status=sent]")).waitFor();
    const stored = await visitorMessages(porch, site.key, "About a big file");
    assert.equal(stored.length, 2, JSON.stringify(stored));
    assert.equal(stored[1].body, "", "a message of just the small file");
    assert.match(await own(page).nth(1).locator("[data-porch=file]").innerText(), /^note\.txt \(1 byte\)$/);
    await ann.context.close();
  } finally {
    await porch.api("PUT", `/sites/${site.key}/attachments`, { max_bytes: 10485760 });
  }
});

// welcome.site.files: a site that takes no files offers none, also to a panel open when it changes.
test("a site that takes no files shows no attach button, and an open panel follows the change", { timeout: 120000 },
  async () => {
    const { porch, host, browser, site } = world;
    const limit = (max_bytes) => porch.api("PUT", `/sites/${site.key}/attachments`, { max_bytes });
    assert.equal((await limit(0)).status, 200);
    try {
      const v = await visitor(browser, host.url);
      const attach = v.page.locator("[data-porch=attach]");
      assert.equal(await attach.isVisible(), false);
      await limit(10485760);
      await attach.waitFor({ state: "visible" });
      await v.say("Files are back");
      await limit(0);
      await attach.waitFor({ state: "hidden" });
      await v.context.close();
    } finally {
      await limit(10485760);
    }
  });

test("a reload after the upload, before the ack, still sends the message exactly once", { timeout: 120000 }, async () => {
  const { porch, host, browser, site } = world;
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  // The websocket goes through the test: once `lose` is set, nothing the server says reaches the panel.
  let lose = false;
  await page.routeWebSocket(/\/widget\/ws/, (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((m) => server.send(m));
    server.onMessage((m) => { if (!lose) ws.send(m); });
  });
  await page.goto(host.url);
  await page.locator("[data-porch=launcher]").click();
  await page.locator("[data-porch=status][data-state=connected]").waitFor();
  // Dropped on the panel, as from the desktop.
  const dropped = await page.locator("[data-porch=panel]").evaluate((panel, b64) => {
    const data = new DataTransfer();
    data.items.add(new File([Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0))], "receipt.png", { type: "image/png" }));
    panel.dispatchEvent(new DragEvent("dragover", { dataTransfer: data, bubbles: true, cancelable: true }));
    const during = panel.classList.contains("drop");
    panel.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
    return { during, after: panel.classList.contains("drop") };
  }, PIXEL);
  assert.deepEqual(dropped, { during: true, after: false }, "the drop target shows while dragging");
  await uploaded(page, 1);
  lose = true;
  await page.locator("[data-porch=input]").fill("Receipt attached");
  await page.locator("[data-porch=input]").press("Enter");
  await waitFor("the server to store it", async () =>
    (await visitorMessages(porch, site.key, "Receipt attached")).length > 0);
  const kept = await page.evaluate((k) => JSON.parse(localStorage.getItem(k)), `porch:${site.key}:pending`);
  assert.equal(kept.length, 1);
  assert.equal(kept[0].attachments[0].name, "receipt.png", "the pending entry names the upload");

  lose = false;
  await page.reload();
  const mine = own(page).filter({ hasText: "Receipt attached" });
  await mine.and(page.locator("[data-status=sent]")).waitFor({ timeout: 30000 });
  assert.equal(await mine.count(), 1);
  await waitFor("the image to load after the reload", () => mine.locator("[data-porch=file-image] img")
    .evaluate((img) => img.complete && img.naturalWidth === 1));
  assert.equal(await page.evaluate((k) => localStorage.getItem(k), `porch:${site.key}:pending`), null);
  const stored = await visitorMessages(porch, site.key, "Receipt attached");
  assert.equal(stored.length, 1, JSON.stringify(stored));
  await context.close();
});

test("an admin lowers the site's attachment limit on the site page and the panel enforces it", { timeout: 120000 },
  async () => {
    const { porch, host, browser, site } = world;
    const adminContext = await browser.newContext();
    const admin = await adminContext.newPage();
    admin.setDefaultTimeout(15000);
    await signIn(admin, porch, AGENT.email);
    await admin.goto(`${porch.url}/sites/${site.key}`);
    const field = admin.getByLabel("Largest attachment (MB)");
    assert.equal(await field.inputValue(), "10");
    await field.fill("0.01");
    await Promise.all([admin.waitForURL(/notice=site-saved/), admin.getByRole("button", { name: "Save changes" }).click()]);
    assert.equal(await admin.getByLabel("Largest attachment (MB)").inputValue(), "0.01");
    assert.deepEqual((await porch.api("GET", `/sites/${site.key}/attachments`)).body, { site: site.key, max_bytes: 10486 });
    try {
      const ann = await visitor(browser, host.url);
      await pick(ann.page, [{ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.alloc(20000, "b") }]);
      const chip = ann.page.locator("[data-porch=chip][data-state=failed]");
      await chip.waitFor();
      assert.match(await chip.innerText(), /Too big: files can be at most 10 KB\./);
      await ann.context.close();
    } finally {
      await field.fill("10");
      await Promise.all([admin.waitForURL(/notice=site-saved/), admin.getByRole("button", { name: "Save changes" }).click()]);
      await adminContext.close();
    }
    assert.equal((await porch.api("GET", `/sites/${site.key}/attachments`)).body.max_bytes, 10485760);
  });

/** A tall PNG (120×600), drawn by the page's own canvas. */
async function tallPng(page) {
  const b64 = await page.evaluate(async () => {
    const canvas = new OffscreenCanvas(120, 600);
    const g = canvas.getContext("2d");
    g.fillStyle = "#2563eb";
    g.fillRect(0, 0, 120, 600);
    const bytes = new Uint8Array(await (await canvas.convertToBlob({ type: "image/png" })).arrayBuffer());
    return btoa(String.fromCharCode(...bytes));
  });
  return Buffer.from(b64, "base64");
}

/** Whether a scrolled box shows its end. */
const atEnd = (box) => box.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight < 4);

test("a picture that loads after its message keeps the thread at its end, in the inbox and in the panel",
  { timeout: 120000 }, async () => {
    const { porch, host, browser } = world;
    const ann = await visitor(browser, host.url);
    // Few messages (each counts on the visitor's rate, as the upload will), but tall ones.
    for (let n = 1; n <= 5; n += 1) await ann.say(`Part ${n}\nof\na\nlong\nstory`);
    const agentContext = await browser.newContext({ viewport: { width: 1200, height: 700 } });
    const agent = await agentContext.newPage();
    agent.setDefaultTimeout(15000);
    await signIn(agent, porch, AGENT.email);
    await agent.goto(`${porch.url}/inbox`);
    await agent.locator("#conversations li", { hasText: "Part 5" }).locator("a").click();
    await agent.waitForURL(/\/conversations\/\d+/);
    const thread = agent.locator("#messages");
    await waitFor("the agent's thread to open at its end", () => atEnd(thread));
    // Pictures arrive a little after their message, as over a real network.
    const slow = async (route) => {
      if (route.request().method() === "GET") await new Promise((r) => setTimeout(r, 400));
      await route.continue();
    };
    await agent.route("**/thumbnail", slow);
    await ann.page.route("**/widget/attachments/**", slow);

    await pick(ann.page, [{ name: "tall.png", mimeType: "image/png", buffer: await tallPng(ann.page) }]);
    await uploaded(ann.page, 1);
    await ann.page.locator("[data-porch=input]").fill("This one");
    await ann.page.locator("[data-porch=input]").press("Enter");
    const thumb = agent.locator(".message-visitor", { hasText: "This one" }).locator(".attachment-image img");
    await waitFor("the agent's thumbnail to load", () => thumb.evaluate((img) => img.complete && img.naturalWidth > 0));
    await waitFor("the agent's thread to stay at its end", () => atEnd(thread), { timeoutMs: 3000 });

    // The agent answers with a picture; the visitor's panel keeps to its end too.
    const [chooser] = await Promise.all([agent.waitForEvent("filechooser"),
      agent.getByText("Attach files", { exact: true }).click()]);
    await chooser.setFiles([{ name: "answer.png", mimeType: "image/png", buffer: await tallPng(agent) }]);
    await agent.locator("#reply-files li", { hasText: "ready" }).waitFor();
    await agent.getByRole("button", { name: "Send reply" }).click();
    const list = ann.page.locator("[data-porch=messages]");
    const picture = ann.page.locator("[data-porch=message][data-author=agent] [data-porch=file-image] img");
    await waitFor("the visitor's picture to load", () =>
      picture.evaluate((img) => img.complete && img.naturalWidth > 0).catch(() => false));
    await waitFor("the panel to stay at its end", () => atEnd(list), { timeoutMs: 3000 });
    await agentContext.close();
    await ann.context.close();
  });

test("ten files at once keep the message box and Send in the panel: the tray scrolls", { timeout: 120000 }, async () => {
  const { host, browser } = world;
  const ann = await visitor(browser, host.url);
  const files = Array.from({ length: 10 }, (_, i) =>
    ({ name: `note-${i}.txt`, mimeType: "text/plain", buffer: Buffer.from(`note ${i}`) }));
  await pick(ann.page, files);
  await waitFor("ten chips", async () => (await ann.page.locator("[data-porch=chip]").count()) === 10);
  const panel = await ann.page.locator("[data-porch=panel]").boundingBox();
  const send = await ann.page.locator("[data-porch=send]").boundingBox();
  assert.ok(send.y + send.height <= panel.y + panel.height, `Send ends at ${send.y + send.height}, the panel at ${panel.y + panel.height}`);
  const tray = ann.page.locator("[data-porch=chips]");
  assert.ok(await tray.evaluate((el) => el.scrollHeight > el.clientHeight), "the tray scrolls");
  await ann.context.close();
});
