// Attachments from a real browser (docs/widget-protocol.md, "Attachments"): a page on the site's
// origin uploads a photo with the visitor token (a CORS request with its preflight) and sends it
// in a `message` frame; the agent's open conversation page shows it live, loaded with the
// session, without the metadata the photo carried. The panel has no attach button yet, so the
// page's own script does what the panel will do.
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
    const chunk = new Uint8Array(12 + text.length - 4);
    new DataView(chunk.buffer).setUint32(0, text.length - 4);
    chunk.set(text, 4);
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
