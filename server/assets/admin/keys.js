// Porch admin: keyboard shortcuts (docs/admin.md, "Keyboard"). On the inbox and conversation
// pages: j/k next/previous conversation in the list's order, e close (on the list: with Undo,
// and z undoes), a assign to me (an unassigned one), / search (#inbox-search, when the page has
// it); ? the list of keys on every page. Never while focus is
// in a text field (input, textarea, select, contenteditable) or with Ctrl, Alt or Meta; Escape in
// the reply box leaves it, so the keys work again. The inbox page keeps its order in
// sessionStorage so that j/k on a conversation page go to the next one of that list.
(() => {
  "use strict";
  const ORDER = "porch-order";
  const OFF = "porch-keys-off"; // localStorage: "1" while the single-key shortcuts are off
  const list = document.getElementById("conversations");
  const here = location.pathname.match(/^\/conversations\/(\d+)$/)?.[1];
  const help = document.getElementById("keys-help");

  const rows = () => (list ? [...list.querySelectorAll(":scope > li > a")] : []);
  const saveOrder = () => {
    try { sessionStorage.setItem(ORDER, JSON.stringify(rows().map((a) => a.parentElement.dataset.id))); } catch { /* blocked */ }
  };
  const savedOrder = () => {
    try { return JSON.parse(sessionStorage.getItem(ORDER)) || []; } catch { return []; }
  };
  // Where a key types (or picks): a checkbox or a button takes no letters, so the keys stay on.
  const NOT_TYPED = ["checkbox", "radio", "button", "submit", "reset", "range", "color", "file", "image"];
  const isTextField = (el) => !!el && (el.isContentEditable || ["TEXTAREA", "SELECT"].includes(el.tagName) ||
    (el.tagName === "INPUT" && !NOT_TYPED.includes(el.type)));

  // The row the keys act on in the list: the focused one.
  const focusedRow = () => rows().find((a) => a === document.activeElement);

  // The live stream replaces a row that changed (after a) and removes one that left the list
  // (after e), and the focus goes with it. It comes back to the same conversation's new row, or
  // to the row that took the old one's place, so j goes on from there rather than from the top.
  let lastRow = null; // {id, index} of the row that had focus last
  const giveFocusBack = () => {
    if (!lastRow || (document.activeElement && document.activeElement !== document.body)) return;
    const all = rows();
    const again = all.find((a) => a.parentElement.dataset.id === lastRow.id) ||
      all[Math.min(lastRow.index, all.length - 1)];
    again?.focus({ preventScroll: true });
  };
  if (list) {
    saveOrder();
    new MutationObserver(() => {
      saveOrder();
      const back = refocus && document.getElementById(`conversation-${refocus}`)?.querySelector("a");
      if (back) {
        refocus = null;
        back.focus();
      } else giveFocusBack();
    }).observe(list, { childList: true });
    // Focus anywhere else (the search box, a link) forgets the row.
    document.addEventListener("focusin", () => {
      const row = focusedRow();
      lastRow = row ? { id: row.parentElement.dataset.id, index: rows().indexOf(row) } : null;
    });
  }
  const move = (step) => {
    if (list) {
      const all = rows();
      const at = all.indexOf(focusedRow());
      const next = all[at < 0 ? (step > 0 ? 0 : all.length - 1) : at + step];
      next?.focus();
      next?.scrollIntoView({ block: "nearest" });
    } else if (here) {
      const order = savedOrder();
      const at = order.indexOf(here);
      const next = at < 0 ? undefined : order[at + step];
      if (next) location.assign(`/conversations/${next}`);
    }
  };

  // On the list, e and a post the same forms the conversation page has, marked as the
  // script's (the answer is 204 when done, else the error as JSON); the live stream then
  // updates the row. Resolves to null when done, else to the reason it was not (a sentence).
  const post = async (id, action, fields) => {
    const csrf = document.querySelector('input[name="csrf"]')?.value || "";
    try {
      const res = await fetch(`/conversations/${id}/${action}`, {
        method: "POST", credentials: "same-origin", redirect: "manual",
        headers: { "x-porch-fetch": "1" },
        body: new URLSearchParams({ csrf, ...fields }),
      });
      if (res.status === 204) return null;
      if (res.status === 401 || res.type === "opaqueredirect") return "You are signed out: sign in again.";
      let message = "";
      try { message = (await res.json()).error.message; } catch { /* not ours */ }
      return message || `The server answered ${res.status}.`;
    } catch {
      return "No answer from the server: check your connection.";
    }
  };
  // What a key did, or why it could not, where the page's notices go; `undo` adds a button.
  const say = (text, undo) => {
    let said = document.getElementById("keys-said");
    if (!said) {
      said = document.createElement("p");
      said.id = "keys-said";
      said.className = "notice";
      said.setAttribute("role", "status");
      document.querySelector("main .page-head")?.after(said);
    }
    said.textContent = text;
    if (undo) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "button";
      button.textContent = "Undo";
      button.addEventListener("click", undo);
      said.append(" ", button);
    }
  };
  const nameOf = (row) => row.querySelector(".visitor bdi")?.textContent || `conversation ${row.dataset.id}`;

  // The last conversation e closed from this list, which Undo (or z) reopens; its row comes
  // back through the live stream and takes the focus.
  let undoable = null;
  let refocus = null;
  const reopen = async () => {
    if (!undoable) return;
    const { id, name } = undoable;
    undoable = null;
    refocus = id;
    setTimeout(() => { if (refocus === id) refocus = null; }, 5000); // a row on another page never comes
    const failed = await post(id, "reopen", {});
    if (failed) refocus = null;
    say(failed ? `Could not reopen the conversation with ${name}. ${failed}` : `Reopened the conversation with ${name}.`);
  };
  const closeRow = async (row) => {
    const name = nameOf(row);
    if (row.querySelector(".badge-muted")) {
      say(`The conversation with ${name} is already closed.`);
      return;
    }
    const failed = await post(row.dataset.id, "close", {});
    if (failed) {
      say(`Could not close the conversation with ${name}. ${failed}`);
      return;
    }
    undoable = { id: row.dataset.id, name };
    say(`Closed the conversation with ${name}.`, reopen);
  };
  const assignRow = async (row) => {
    const name = nameOf(row);
    const failed = await post(row.dataset.id, "assign", { assignee: "me", from: "" });
    say(failed ? `Could not assign the conversation with ${name} to you. ${failed}` : `Assigned the conversation with ${name} to you.`);
  };
  const act = (shortcut, onRow) => {
    if (here) {
      document.querySelector(`form[data-shortcut="${shortcut}"]`)?.requestSubmit();
      return;
    }
    const row = focusedRow()?.parentElement;
    if (row) onRow(row);
  };

  // The switches (the keys dialog, the account page) turn every single-key shortcut off, "?"
  // too: WCAG 2.1.4 asks that they can be, for speech input and stray keystrokes.
  const keysOff = () => {
    try { return localStorage.getItem(OFF) === "1"; } catch { return false; }
  };
  const switches = [...document.querySelectorAll("[data-keys-switch]")];
  for (const box of switches) {
    box.checked = !keysOff();
    box.addEventListener("change", () => {
      try {
        if (box.checked) localStorage.removeItem(OFF);
        else localStorage.setItem(OFF, "1");
      } catch { /* storage blocked: the switch lasts for this page */ }
      for (const other of switches) other.checked = box.checked;
    });
  }
  const keysOn = () => switches.length ? switches[0].checked : !keysOff();

  const inboxPage = !!list || !!here;
  const keys = {
    j: () => move(1),
    k: () => move(-1),
    e: () => act("close", closeRow),
    z: () => {
      if (!undoable) return false;
      reopen();
      return true;
    },
    // Only an unassigned conversation: a colleague's is taken over with the page's button, and
    // the key says so rather than doing nothing in silence.
    a: () => {
      const over = here && [...document.querySelectorAll("#conversation-aside button")]
        .find((b) => b.textContent.startsWith("Take over"));
      const name = !here && focusedRow()?.parentElement.querySelector(".assignee:not(.assignee-none)")?.textContent;
      if (over) say(`A colleague has this conversation: press \u201c${over.textContent}\u201d to take it.`);
      else if (name && name !== "You") say(`Assigned to ${name}: open the conversation to take it over.`);
      else act("assign-me", assignRow);
    },
    "/": () => {
      const search = document.getElementById("inbox-search");
      if (!search) return false;
      search.focus();
      return true;
    },
  };

  // A modal <dialog> makes the page inert, but Tab from its last control would leave for the
  // browser's own UI: keep it cycling inside.
  help?.addEventListener("keydown", (e) => {
    if (e.key !== "Tab") return;
    const items = [...help.querySelectorAll("button, [href], input, select, textarea, [tabindex]:not([tabindex='-1'])")];
    if (!items.length) return;
    const edge = e.shiftKey ? items[0] : items[items.length - 1];
    if (document.activeElement === edge || !help.contains(document.activeElement)) {
      e.preventDefault();
      (e.shiftKey ? items[items.length - 1] : items[0]).focus();
    }
  });

  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.altKey || e.metaKey || e.isComposing) return;
    const target = e.target;
    if (isTextField(target)) {
      if (e.key === "Escape" && target.id === "reply-body") target.blur();
      return;
    }
    if (help?.open) return; // the dialog handles its own keys (Escape closes it)
    if (!keysOn()) return;
    if (e.key === "?" && help) {
      e.preventDefault();
      help.showModal();
      return;
    }
    const handle = inboxPage ? keys[e.key] : null;
    if (handle && handle() !== false) e.preventDefault();
  });
})();
