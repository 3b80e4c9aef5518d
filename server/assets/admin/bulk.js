// Porch admin: choosing rows of the inbox list for one action (docs/admin.md, "Several at
// once"). The form works without this script (tick, choose, Apply); this adds "Select all",
// the count of what is ticked, shows the action and Apply only while something is (so the list
// starts higher), and keeps the ticks when the live stream replaces a row (a visitor wrote in
// it) or adds one (which starts unticked).
(() => {
  "use strict";

  const form = document.getElementById("bulk");
  const list = document.getElementById("conversations");
  if (!form || !list) return;
  const all = form.querySelector("[data-select-all]");
  const count = form.querySelector("[data-selected]");
  const controls = form.querySelector("[data-bulk-controls]");
  all.closest("label").hidden = false;

  // Ids ticked, by conversation: a replaced row is a new element.
  const ticked = new Set();
  const boxes = () => [...list.querySelectorAll("input[name=id]")];
  const show = () => {
    const shown = boxes();
    const n = shown.filter((b) => b.checked).length;
    // A page watched live can hold more rows than the server takes at once.
    const max = Number(form.dataset.max);
    const over = n > max;
    count.textContent = !n ? "" : over ? `${n} selected: at most ${max} at once, untick some` : `${n} selected`;
    controls.hidden = n === 0 || over;
    all.checked = n > 0 && n === shown.length;
    all.indeterminate = n > 0 && n < shown.length;
    form.hidden = shown.length === 0;
  };
  const tick = (box, on) => {
    box.checked = on;
    if (on) ticked.add(box.value);
    else ticked.delete(box.value);
  };

  list.addEventListener("change", (e) => {
    if (e.target.name !== "id") return;
    tick(e.target, e.target.checked);
    show();
  });
  all.addEventListener("change", () => {
    for (const box of boxes()) tick(box, all.checked);
    show();
  });
  new MutationObserver(() => {
    const shown = boxes();
    for (const box of shown) box.checked = ticked.has(box.value);
    // A row that left the list (closed by a colleague, say) is no longer ticked.
    for (const id of [...ticked]) if (!shown.some((b) => b.value === id)) ticked.delete(id);
    show();
  }).observe(list, { childList: true });
  // Ticks the browser restored on Back.
  for (const box of boxes()) if (box.checked) ticked.add(box.value);
  show();
})();
