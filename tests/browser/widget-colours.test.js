// Text on the site colour (docs/widget.md, "The button" and "Dark mode"): white or black, whichever contrasts
// more, so the launcher's label and the panel header's status reach WCAG AA (4.5:1) on any colour a site picks,
// mid-tones included (with near-black #111827 instead of black, a grey or red site fell to 3.9-4.4:1).
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixture, hostWithColourQuery } from "./harness.js";

// The host page takes the snippet's colour from its ?color= query, as a site's template would.
const world = fixture({ site: "Acme Colours" }, hostWithColourQuery);

// WCAG 2.x contrast of an element's text against the nearest opaque background behind it.
function contrastOf(el) {
  const rgb = (s) => s.match(/[\d.]+/g).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => v / 255)
    .map((v) => (v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4))
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  let bg = null;
  for (let at = el; at && !bg; at = at.parentElement || at.getRootNode().host) {
    const c = rgb(getComputedStyle(at).backgroundColor);
    if ((c[3] ?? 1) === 1) bg = c;
  }
  const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(bg)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}

// Mid-tones where neither white nor near-black reaches 4.5:1, brand colours white fell short on, and the
// default blue and a pale yellow (white and black at their best).
const COLOURS = ["#808080", "#ff0000", "#16a34a", "#0ea5e9", "#f97316", "#2563eb", "#fde047", "#1e293b"];

test("the launcher's label and the panel's status reach 4.5:1 on every site colour, in both schemes",
  { timeout: 120000 }, async () => {
    const { host, browser } = world;
    for (const colorScheme of ["light", "dark"]) {
      const context = await browser.newContext({ colorScheme });
      try {
        for (const color of COLOURS) {
          const page = await context.newPage();
          await page.goto(`${host.url}?color=${encodeURIComponent(color)}`);
          const launcher = page.locator("[data-porch=launcher]");
          const label = await launcher.evaluate(contrastOf);
          assert.ok(label >= 4.5, `${colorScheme} ${color}: the launcher's label at ${label.toFixed(2)}:1`);
          await launcher.click();
          const status = page.locator("[data-porch=status][data-state=connected]");
          await status.waitFor();
          const said = await status.evaluate(contrastOf);
          assert.ok(said >= 4.5, `${colorScheme} ${color}: the header's status at ${said.toFixed(2)}:1`);
          await page.close();
        }
      } finally {
        await context.close();
      }
    }
  });
