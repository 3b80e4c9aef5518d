// Porch canned-reply picker for the conversation page's reply box. Typing "/" at the start of
// a word opens a list of the agent's canned replies (shared and personal), filtered fuzzily by
// what follows the slash; Up/Down move, Enter or Tab inserts the reply in place of "/word"
// (placeholders already filled by the server), Escape closes. The list is a role="listbox";
// the reply box points at the active option with aria-activedescendant, so focus never leaves
// the box. A textarea cannot be a combobox, so screen readers would not hear the list open: a
// polite status beside it says how many replies it offers and how to choose, when that number
// changes (not on every key). The replies are fetched once, on the first "/", from the box's
// data-canned URL. The "Canned reply" button types that "/" for whoever does not know it: it
// puts "/" at the caret (with a space on each side that touches a word) and the list opens as if
// typed, or, when there is no reply to offer, a line says where to add them (and no "/" is put).
// Every piece of text is set with textContent: nothing from a reply is ever parsed as HTML.
(() => {
  "use strict";
  const box = document.querySelector("textarea[data-canned]");
  const list = document.getElementById("canned-list");
  if (!box || !list) return;
  const form = box.form;
  let replies = null; // null: not fetched yet
  let loading = null;
  let shown = []; // the replies on the list, in order
  let active = -1;
  let word = null; // { start, end, query } of the "/word" at the caret
  const said = document.createElement("p");
  said.className = "visually-hidden";
  said.setAttribute("role", "status");
  said.dataset.cannedStatus = "";
  list.after(said);
  const say = (n) => {
    const text = n === 0 ? "" : `${n} canned ${n === 1 ? "reply" : "replies"}: Up and Down to choose, Enter to insert.`;
    if (said.textContent !== text) said.textContent = text;
  };

  const load = () => {
    loading ??= fetch(box.dataset.canned, {
      credentials: "same-origin", headers: { "x-porch-fetch": "1" },
    }).then((res) => (res.ok ? res.json() : { replies: [] }))
      .then((data) => { replies = Array.isArray(data.replies) ? data.replies : []; })
      .catch(() => { loading = null; });
    return loading;
  };

  // The "/word" that ends at the caret, if the caret is in one that starts a word.
  const wordAtCaret = () => {
    if (box.selectionStart !== box.selectionEnd) return null;
    const end = box.selectionStart;
    const before = box.value.slice(0, end);
    const match = /(^|\s)\/([\w-]*)$/u.exec(before);
    if (!match) return null;
    return { start: end - match[2].length - 1, end, query: match[2].toLowerCase() };
  };

  // Subsequence match on the shortcut: lower is better; a prefix beats a substring beats
  // scattered letters; null when the letters are not all there in order.
  const score = (shortcut, query) => {
    if (!query) return 0;
    if (shortcut.startsWith(query)) return 1;
    const at = shortcut.indexOf(query);
    if (at >= 0) return 2 + at;
    let from = 0;
    let gaps = 0;
    for (const ch of query) {
      const found = shortcut.indexOf(ch, from);
      if (found < 0) return null;
      gaps += found - from;
      from = found + 1;
    }
    return 100 + gaps;
  };

  const close = () => {
    list.hidden = true;
    list.replaceChildren();
    shown = [];
    active = -1;
    word = null;
    box.removeAttribute("aria-activedescendant");
    say(0);
  };

  const highlight = (index) => {
    active = index;
    for (const [i, item] of [...list.children].entries()) {
      item.setAttribute("aria-selected", String(i === index));
    }
    const item = list.children[index];
    if (item) {
      box.setAttribute("aria-activedescendant", item.id);
      item.scrollIntoView({ block: "nearest" });
    }
  };

  const insert = (reply) => {
    const at = word;
    close();
    if (!at) return;
    box.setRangeText(reply.text, at.start, at.end, "end");
    // inbox.js keeps the draft on "input".
    box.dispatchEvent(new Event("input", { bubbles: true }));
    box.focus();
  };

  const render = () => {
    shown = replies
      .map((reply) => ({ reply, rank: score(reply.shortcut, word.query) }))
      .filter((r) => r.rank !== null)
      .sort((a, b) => a.rank - b.rank || a.reply.shortcut.localeCompare(b.reply.shortcut))
      .slice(0, 8)
      .map((r) => r.reply);
    if (shown.length === 0) { close(); return; }
    list.replaceChildren(...shown.map((reply, i) => {
      const item = document.createElement("li");
      item.id = `canned-option-${i}`;
      item.setAttribute("role", "option");
      const name = document.createElement("span");
      name.className = "canned-shortcut";
      name.textContent = `/${reply.shortcut}`;
      const scope = document.createElement("span");
      scope.className = "canned-scope";
      scope.textContent = reply.scope === "shared" ? " shared · " : " personal · ";
      const text = document.createElement("span");
      text.className = "canned-text";
      text.textContent = reply.text;
      item.append(name, scope, text);
      // mousedown, not click: the box must keep focus and its caret.
      item.addEventListener("mousedown", (e) => { e.preventDefault(); insert(reply); });
      return item;
    }));
    list.hidden = false;
    say(shown.length);
    highlight(0);
  };

  const update = async () => {
    const found = wordAtCaret();
    if (!found) { close(); return; }
    if (replies === null) await load();
    // The box may have changed while the list loaded.
    word = wordAtCaret();
    if (!word || !replies) { close(); return; }
    render();
  };

  const opener = form.querySelector("[data-canned-open]");
  const empty = document.getElementById("canned-empty");
  if (opener && empty) {
    opener.hidden = false;
    // The box keeps the focus and its caret through a press on the button (a touch too).
    opener.addEventListener("mousedown", (e) => e.preventDefault());
    opener.addEventListener("click", async () => {
      clearTimeout(closing);
      if (replies === null) await load();
      box.focus();
      // None to offer: the line says where to add them, and no "/" is left to send by mistake.
      empty.hidden = replies === null || replies.length > 0;
      if (!empty.hidden) return;
      // A space on each side that touches a word, so the reply picked never sticks to it.
      const [start, end] = [box.selectionStart, box.selectionEnd];
      const before = /(^|\s)$/u.test(box.value.slice(0, start)) ? "" : " ";
      const after = /^(\s|$)/u.test(box.value.slice(end)) ? "" : " ";
      box.setRangeText(`${before}/${after}`, start, end, "end");
      box.setSelectionRange(box.selectionEnd - after.length, box.selectionEnd - after.length);
      box.dispatchEvent(new Event("input", { bubbles: true }));
    });
    box.addEventListener("input", () => { empty.hidden = true; });
  }

  box.addEventListener("input", update);
  box.addEventListener("click", update);
  // Later, so a click on an option (or the button) lands first; the button cancels it.
  let closing = null;
  box.addEventListener("blur", () => { closing = setTimeout(close, 0); });

  // Capture phase on the form: runs before inbox.js's Enter-sends on the box itself, so Enter
  // picks a reply instead of sending while the list is open.
  form.addEventListener("keydown", (e) => {
    if (e.target !== box || list.hidden || shown.length === 0) return;
    const keys = {
      ArrowDown: () => highlight((active + 1) % shown.length),
      ArrowUp: () => highlight((active - 1 + shown.length) % shown.length),
      Enter: () => insert(shown[active]),
      Tab: () => insert(shown[active]),
      Escape: close,
    };
    const act = keys[e.key];
    if (!act || e.isComposing || (e.key === "Enter" && e.shiftKey)) return;
    e.preventDefault();
    e.stopPropagation();
    act();
  }, true);
})();
