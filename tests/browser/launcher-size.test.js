// The embed snippet is pasted into every page of a customer's site: it must stay small.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { Porch, REPO } from "./harness.js";

const LIMIT = 4096; // bytes, gzip -9, as served

let porch;
after(async () => { await porch?.dispose(); });

test("the snippet printed by `porch site add` is at most 4 KiB gzipped", { timeout: 30000 }, async () => {
  porch = await Porch.create();
  const { key, snippet } = await porch.addSite("Acme Size", "http://127.0.0.1:9");
  assert.match(key, /^s_[0-9a-f]{16}$/);
  assert.ok(snippet.startsWith("<script>(function(c){"), snippet.slice(0, 80));
  assert.ok(snippet.endsWith(");</script>"), snippet.slice(-80));
  assert.ok(snippet.includes(key));
  const raw = Buffer.byteLength(snippet);
  const gzipped = gzipSync(snippet, { level: 9 }).length;
  console.log(`launcher snippet: ${raw} bytes raw, ${gzipped} bytes gzip -9 (limit ${LIMIT})`);
  assert.ok(gzipped <= LIMIT, `${gzipped} bytes gzipped is over ${LIMIT}`);
});

// The panel (fetched on the first click) has its own budget (issue #16): script and styles together.
const PANEL_LIMIT = 16384;

// The script is written in parts (server/src/widget/panel_source.rs), served as one.
const PANEL_PARTS = path.join(REPO, "server/assets/widget/panel");
const widgetSource = async (name) => {
  if (name !== "panel.js") return readFile(path.join(REPO, "server/assets/widget", name));
  const parts = await Promise.all((await readdir(PANEL_PARTS)).map((part) => readFile(path.join(PANEL_PARTS, part))));
  return Buffer.concat(parts);
};

// Measured as served: Porch drops the sources' comments and indentation (server/src/widget/compact.rs).
test("the panel's script and styles are at most 16 KiB gzipped together, as served", { timeout: 30000 }, async () => {
  porch ??= await Porch.create();
  if (!porch.proc) await porch.start();
  let total = 0;
  for (const name of ["panel.js", "panel.css"]) {
    const res = await fetch(`${porch.url}/widget/${name}`, { headers: { "accept-encoding": "identity" } });
    assert.equal(res.status, 200, name);
    const text = Buffer.from(await res.arrayBuffer());
    const source = await widgetSource(name);
    assert.ok(text.length > source.length / 2 && text.length < source.length, `${name}: ${text.length} of ${source.length}`);
    const gzipped = gzipSync(text, { level: 9 }).length;
    console.log(`${name}: ${text.length} bytes raw as served (${source.length} in the source), ${gzipped} bytes gzip -9`);
    total += gzipped;
  }
  assert.ok(total <= PANEL_LIMIT, `the panel is ${total} bytes gzipped, over ${PANEL_LIMIT}`);
});

// Translations are fetched one at a time, only the visitor's language and only after the click, so they are
// outside the panel's budget; each has its own.
const LOCALE_LIMIT = 2048;

test("each translation is at most 2 KiB gzipped", async () => {
  const dir = path.join(REPO, "server/assets/widget/locales");
  const names = (await readdir(dir)).filter((n) => n.endsWith(".json"));
  assert.ok(names.length >= 12, `only ${names.length} translations`);
  for (const name of names) {
    const gzipped = gzipSync(await readFile(path.join(dir, name)), { level: 9 }).length;
    assert.ok(gzipped <= LOCALE_LIMIT, `${name} is ${gzipped} bytes gzipped, over ${LOCALE_LIMIT}`);
  }
});

test("the widget's files are pure ASCII, so no host-page charset can garble them", async () => {
  const parts = (await readdir(PANEL_PARTS)).map((part) => `panel/${part}`);
  assert.ok(parts.length >= 5, `only ${parts.length} parts of the panel`);
  for (const name of ["launcher.js", ...parts, "panel.css"]) {
    const text = await readFile(path.join(REPO, "server/assets/widget", name), "utf8");
    const line = text.split("\n").findIndex((l) => /[^\x00-\x7f]/.test(l));
    assert.equal(line, -1, `${name}:${line + 1} has a non-ASCII character; write it as a \\u escape`);
  }
});
