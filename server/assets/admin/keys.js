// Porch admin: keyboard shortcuts (docs/admin.md, "Keyboard"). On the inbox and conversation
// pages: j/k next/previous conversation in the list's order, e close (on the list: with Undo,
// and z undoes), a assign to me (an unassigned one), t tag (a conversation page), / search
// (#inbox-search, when the page has it); ? the list of keys on every page. Never while focus is
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
  let lastRow = null; // {id, index, name} of the row that had focus last
  let actedOn = null; // the conversation the keys last posted for: its row leaving is no news
  // The conversation Undo (or z) reopened: its row takes the focus when the stream brings it
  // back, unless the agent has gone elsewhere meanwhile (typing in the search box, say).
  let refocus = null;
  // Where e left the focus counts as free too: the list, or the sentence saying it is empty.
  const focusIsFree = () => !document.activeElement || document.activeElement === document.body ||
    !!focusedRow() || !!document.activeElement.closest("#keys-said, #conversations, [data-empty]");
  const giveFocusBack = () => {
    if (!lastRow || (document.activeElement && document.activeElement !== document.body)) return;
    const all = rows();
    const had = lastRow; // focusing below starts a new one (focusin)
    const same = all.find((a) => a.parentElement.dataset.id === had.id);
    const again = same || all[Math.min(had.index, all.length - 1)];
    // The last row left: the list itself keeps the place (it takes focus, tabindex -1, and
    // inbox.js passes it on to the sentence saying the list is empty).
    (again || list).focus({ preventScroll: true });
    // Changed elsewhere (a colleague closed it, say): the next key would act on another
    // conversation than the one the agent chose, so they hear which.
    if (same) return;
    if (had.id === actedOn) {
      actedOn = null;
      return;
    }
    const now = again ? `the focus is on the conversation with ${nameOf(again.parentElement)}` : "the list is empty";
    say(`The conversation with ${had.name} left this list, changed elsewhere: ${now}.`, null, null, true);
  };
  if (list) {
    saveOrder();
    new MutationObserver(() => {
      saveOrder();
      const back = refocus && document.getElementById(`conversation-${refocus}`)?.querySelector("a");
      if (back && focusIsFree()) {
        refocus = null;
        back.focus();
      } else giveFocusBack();
    }).observe(list, { childList: true });
    // Focus anywhere else (the search box, a link) forgets the row.
    document.addEventListener("focusin", () => {
      const row = focusedRow();
      lastRow = row ? { id: row.parentElement.dataset.id, index: rows().indexOf(row), name: nameOf(row.parentElement) } : null;
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
      // A key that does nothing says why, or it reads as a dead key.
      else say(at < 0 ? "This conversation is not in the inbox list you came from: open the inbox to move through it."
        : `This is the ${step > 0 ? "last" : "first"} conversation of the inbox list you came from.`);
    }
  };

  // On the list, e and a post the same forms the conversation page has, marked as the
  // script's (the answer is 204 when done, else the error as JSON); the live stream then
  // updates the row. Resolves to null when done, else to why not: {text} (a sentence), with
  // `href` when the server names a page to go on to.
  const post = async (id, action, fields) => {
    actedOn = id;
    const csrf = document.querySelector('input[name="csrf"]')?.value || "";
    try {
      // Not forever: a request the browser holds back, or a server that never answers, is said.
      const res = await fetch(`/conversations/${id}/${action}`, {
        method: "POST", credentials: "same-origin", redirect: "manual",
        headers: { "x-porch-fetch": "1" }, signal: AbortSignal.timeout(20000),
        body: new URLSearchParams({ csrf, ...fields }),
      });
      if (res.status === 204) return null;
      if (res.status === 401 || res.type === "opaqueredirect") return { text: "You are signed out: sign in again." };
      let error = {};
      try { error = (await res.json()).error || {}; } catch { /* not ours */ }
      const text = error.message || `The server answered ${res.status}.`;
      const href = typeof error.href === "string" && error.href.startsWith("/conversations/") ? error.href : null;
      return { text, href };
    } catch {
      return { text: "No answer from the server: check your connection." };
    }
  };
  // What a key did, or why it could not, in the page's status region (#keys-said, rendered
  // empty under the heading so that screen readers announce what comes into it). `undo`
  // ({label, run}) adds a button, `link` ({text, href}) a link; a notice without Undo ends the
  // last Undo's offer (z still undoes after news that is not the agent's own doing, `news`). If
  // the focus was in the notice (its Undo pressed), it stays there rather than falling to the page.
  const say = (text, undo, link, news) => {
    const region = document.getElementById("keys-said");
    if (!region) return;
    const hadFocus = region.contains(document.activeElement);
    if (!undo && !news) undoable = null;
    const notice = document.createElement("p");
    notice.className = "notice";
    notice.tabIndex = -1;
    notice.textContent = text;
    if (undo) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "button";
      button.textContent = "Undo";
      button.setAttribute("aria-label", undo.label);
      button.addEventListener("click", undo.run);
      notice.append(" ", button);
    }
    if (link) {
      const a = document.createElement("a");
      a.href = link.href;
      a.textContent = link.text;
      notice.append(" ", a);
    }
    region.replaceChildren(notice);
    if (hadFocus) notice.focus();
  };
  const nameOf = (row) => row.querySelector(".visitor bdi")?.textContent || `conversation ${row.dataset.id}`;

  // The last conversation e closed from this list, which Undo (or z) reopens; its row comes
  // back through the live stream and takes the focus.
  let undoable = null;
  const reopen = async () => {
    if (!undoable) return;
    const { id, name } = undoable;
    undoable = null;
    refocus = id;
    setTimeout(() => { if (refocus === id) refocus = null; }, 5000); // a row on another page never comes
    const failed = await post(id, "reopen", {});
    if (!failed) {
      say(`Reopened the conversation with ${name}.`);
      return;
    }
    refocus = null;
    // A newer conversation of the visitor's: the server names it, and the notice links it.
    say(`Could not reopen the conversation with ${name}. ${failed.text}`, null,
      failed.href && { text: "Open the newer conversation", href: failed.href });
  };
  const closeRow = async (row) => {
    const name = nameOf(row);
    if (row.querySelector("[data-closed]")) {
      say(`The conversation with ${name} is already closed.`);
      return;
    }
    const failed = await post(row.dataset.id, "close", {});
    if (failed) {
      say(`Could not close the conversation with ${name}. ${failed.text}`);
      return;
    }
    say(`Closed the conversation with ${name}.`,
      { label: `Undo closing the conversation with ${name}`, run: reopen });
    undoable = { id: row.dataset.id, name };
  };
  const assignRow = async (row) => {
    const name = nameOf(row);
    const failed = await post(row.dataset.id, "assign", { assignee: "me", from: "" });
    say(failed ? `Could not assign the conversation with ${name} to you. ${failed.text}` : `Assigned the conversation with ${name} to you.`);
  };
  const snoozeRow = async (row) => {
    const name = nameOf(row);
    // As on a conversation page, which has no Snooze then (the server would move the end).
    const state = row.querySelector("[data-closed]") ? "closed"
      : row.querySelector("[data-snoozed]") ? "snoozed already" : "";
    if (state) {
      say(`The conversation with ${name} is ${state}: only an open one that is not snoozed can be snoozed.`);
      return;
    }
    const failed = await post(row.dataset.id, "snooze", { minutes: "60" });
    say(failed ? `Could not snooze the conversation with ${name}. ${failed.text}` : `Snoozed the conversation with ${name} for an hour.`);
  };
  const unreadRow = async (row) => {
    const name = nameOf(row);
    const failed = await post(row.dataset.id, "unread", {});
    say(failed ? `Could not mark the conversation with ${name} unread. ${failed.text}` : `Marked the conversation with ${name} unread.`);
  };
  // On a conversation page the key submits the page's own form, and says why when the page
  // has none (`missing`: closed already, yours already). The page that comes back puts the
  // focus in the reply box, where a next key is typed, not acted on: taking a chat with `a` and
  // then writing must not close it with the first "e" of the reply.
  const act = (shortcut, onRow, missing) => {
    if (here) {
      const form = document.querySelector(`form[data-shortcut="${shortcut}"]`);
      if (form) form.requestSubmit();
      else say(document.body.dataset.ended ? `${document.body.dataset.ended} Nothing is left to act on.` : missing);
      return;
    }
    const row = focusedRow()?.parentElement;
    if (row) onRow(row);
  };

  // The switches (the keys dialog, the account page) turn every single-key shortcut off, "?"
  // too: WCAG 2.1.4 asks that they can be, for speech input and stray keystrokes. The setting
  // is read at each key, so a switch turned in another tab counts here at once; where storage
  // is blocked, this page's switch decides.
  const switches = [...document.querySelectorAll("[data-keys-switch]")];
  const keysOn = () => {
    try { return localStorage.getItem(OFF) !== "1"; } catch { return switches.length ? switches[0].checked : true; }
  };
  const showSetting = () => { for (const box of switches) box.checked = keysOn(); };
  showSetting();
  for (const box of switches) {
    box.addEventListener("change", () => {
      try {
        if (box.checked) localStorage.removeItem(OFF);
        else localStorage.setItem(OFF, "1");
      } catch { /* storage blocked: the switch lasts for this page */ }
      for (const other of switches) other.checked = box.checked;
    });
  }
  window.addEventListener("storage", (e) => { if (e.key === OFF || e.key === null) showSetting(); });

  // A conversation page's done-notice (`?notice=closed`, …), or the inbox's (`marked-unread`),
  // says what a form just did: the address drops it (and keeps the list's filters), so a reload
  // or Back does not show it again as news, and its text comes in again once the page is
  // loaded, when screen readers announce it (text already there at load is not announced, and
  // the focus is in the reply box).
  const query = new URLSearchParams(location.search);
  // The bulk form's answer says `bulk=…&done=…&skipped=…&failed=…` (admin/bulk.rs).
  const said = ["notice", "bulk", "done", "skipped", "failed"];
  if ((here || list) && said.some((name) => query.has(name))) {
    for (const name of said) query.delete(name);
    const rest = query.size ? `?${query}` : "";
    history.replaceState(history.state, "", location.pathname + rest + location.hash);
    const done = document.querySelector("main .notice-success[role='status']");
    if (done) {
      const text = done.textContent;
      done.textContent = "";
      setTimeout(() => { done.textContent = text; }, 100);
    }
  }

  const inboxPage = !!list || !!here;
  const keys = {
    j: () => move(1),
    k: () => move(-1),
    e: () => act("close", closeRow, "This conversation is closed already."),
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
      else if (name === "You") say("This conversation is assigned to you already.");
      else if (name) say(`Assigned to ${name}: open the conversation to take it over.`);
      else act("assign-me", assignRow, "This conversation is assigned to you already.");
    },
    u: () => act("unread", unreadRow, ""),
    // Ticks (or unticks) the focused row for the form above the list, as in Gmail.
    x: () => {
      const box = !here && focusedRow()?.parentElement.querySelector("input[name=id]");
      if (!box) return false;
      box.checked = !box.checked;
      box.dispatchEvent(new Event("change", { bubbles: true }));
      return true;
    },
    // As in Gmail. On a conversation page, for as long as its Snooze field says (an hour unless
    // changed); on the list, an hour.
    b: () => act("snooze", snoozeRow, "Only an open conversation that is not snoozed can be snoozed."),
    // On a conversation page: the field for new tags (Escape there leaves it, as in any field).
    t: () => {
      const field = here && document.getElementById("tag-add");
      if (!field) return false;
      field.focus();
      return true;
    },
    "/": () => {
      const search = document.getElementById("inbox-search");
      if (!search) return false;
      search.focus();
      return true;
    },
  };

  // A conversation opened at a message (a search result's #m…): browsers give no autofocus to a
  // page opened at a fragment, and once loaded they move the focus to the fragment's target (or,
  // as a message takes none, to the page). So the reply box takes it after that, the view left
  // on the message, unless the focus went somewhere meanwhile.
  const reply = document.getElementById("reply-body");
  if (here && reply && location.hash) {
    const take = () => {
      if (!document.activeElement || document.activeElement === document.body) reply.focus({ preventScroll: true });
    };
    if (document.readyState === "complete") setTimeout(take);
    else window.addEventListener("load", () => setTimeout(take), { once: true });
  }

  // The docs' tables and examples: a box is a tab stop and a named region only while it scrolls
  // sideways (the HTML makes every one so, for readers without the script), so a long document
  // is not dozens of tab stops and landmarks.
  const boxes = [...document.querySelectorAll(".doc-scroll")];
  const fitBoxes = () => {
    for (const box of boxes) {
      if (box.scrollWidth > box.clientWidth + 1) {
        box.tabIndex = 0;
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", box.dataset.label);
      } else {
        for (const name of ["tabindex", "role", "aria-label"]) box.removeAttribute(name);
      }
    }
  };
  if (boxes.length) {
    fitBoxes();
    window.addEventListener("resize", fitBoxes);
  }

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
      // Left for the page's main region, where the keys work, rather than for nowhere (<body>, where a
      // screen reader loses its place).
      if (e.key === "Escape" && ["reply-body", "tag-add"].includes(target.id)) {
        document.getElementById("main")?.focus({ preventScroll: true });
      }
      return;
    }
    if (help?.open) return; // the dialog handles its own keys (Escape closes it)
    if (!keysOn()) return;
    if (e.key === "?" && help) {
      e.preventDefault();
      help.showModal();
      return;
    }
    // `/` wherever the search box is (the search page too); the others on the inbox's pages.
    const handle = inboxPage || e.key === "/" ? keys[e.key] : null;
    if (handle && handle() !== false) e.preventDefault();
  });
})();
