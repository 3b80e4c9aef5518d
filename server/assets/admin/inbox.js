// Porch admin: live updates and small conveniences. Every page works without this script.
// - A list with data-live (inbox or conversation) follows a Server-Sent Events stream of HTML
//   fragments rendered by the server; on reconnect the browser sends Last-Event-ID and the
//   server replays what was missed. The inbox places each row by its sort key, within the page.
// - The reply box: Enter sends, Shift+Enter starts a new line (on a touch screen Enter starts a
//   new line and the button sends); posts the same form with fetch,
//   keeps the text (and a draft in sessionStorage) until the server confirms it stored it, and
//   inserts only an answer marked as the message fragment. Attach files (shown only with this
//   script) uploads each picked file with the CSRF token in a header; the reply names them.
// - Typing both ways: the reply box, in reply mode only (never while a private note is written),
//   tells the visitor the agent is typing (at most once per 3 s, stopped on send, blur, 5 s idle
//   or a switch to note), which colleagues with the page open see as "Ana is replying…"; and
//   "Visitor is typing…" shows for 6 s per signal.
// - Every stream also carries the agent's unread counts and alerts: passed on to notify.js as
//   porch:counts and porch:alert events.
// - Copy buttons, local times, site colour swatches, and the visitor's local time (a
//   .visitor-clock with data-time-zone; the aside may be replaced live, so each tick looks again).
// - An element with data-refresh (the capacity graphs, a queued test's outcome) is fetched again
//   every data-refresh-every seconds while the tab is visible, and updated in place from the
//   element of the same id in the server's fresh rendering (a fragment or the whole page), with
//   the elements data-refresh-with names, until a rendering comes without data-refresh (the
//   test's outcome is known).
(() => {
  "use strict";

  // Fragments come from our own server, rendered by Leptos with every text escaped.
  const fromHtml = (html) => {
    const t = document.createElement("template");
    t.innerHTML = html.trim();
    return t.content.firstElementChild;
  };

  // time.js, loaded first, shows times in the reader's zone.
  const localTime = window.porchLocalTime;

  // Status regions are in the page from the start and only their text changes (screen readers
  // announce text coming into a region, not a region appearing); the same text is not put in
  // again, or every retry would be announced anew.
  const say = (region, text) => { if (region && region.textContent !== text) region.textContent = text; };

  const status = document.querySelector("[data-live-status]");
  const setLive = (ok) => say(status, ok ? "" : "Reconnecting\u2026");

  // Opens the stream, and opens it again if the browser gave up (EventSource retries network
  // errors by itself, but not an HTTP error answer): after 3 s, doubling up to 30 s, unless the
  // session is gone (notify.js finds out and says so).
  const follow = (list, handlers) => {
    let lastId = list.dataset.lastId || "0";
    let failures = 0;
    const connect = () => {
      const sep = list.dataset.live.includes("?") ? "&" : "?";
      const source = new EventSource(`${list.dataset.live}${sep}after=${encodeURIComponent(lastId)}`);
      // data-state says whether the list follows the server right now ("live") or not.
      source.onopen = () => { failures = 0; setLive(true); list.dataset.state = "live"; };
      source.onerror = () => {
        setLive(false);
        list.dataset.state = "reconnecting";
        if (source.readyState !== EventSource.CLOSED) return;
        const wait = Math.min(30000, 3000 * 2 ** failures++);
        document.dispatchEvent(new CustomEvent("porch:stream-closed", { detail: () => setTimeout(connect, wait) }));
      };
      for (const [name, handle] of Object.entries(handlers)) {
        source.addEventListener(name, (e) => {
          if (e.lastEventId) lastId = e.lastEventId;
          handle(e.data, source, e.lastEventId);
        });
      }
    };
    connect();
  };

  // Counts and alerts are notify.js's business.
  const relay = (name) => (data) => {
    try { document.dispatchEvent(new CustomEvent(name, { detail: JSON.parse(data) })); } catch { /* ignore */ }
  };
  const shared = { counts: relay("porch:counts"), alert: relay("porch:alert") };

  const conversations = document.getElementById("conversations");
  if (conversations?.dataset.live) {
    const empty = document.querySelector("[data-empty]");
    // A row's unread mark, in the markup of the list item (app/src/inbox.rs): the class, a dot,
  // and "Unread: " for screen readers.
  const markUnread = (id, on) => {
    const row = document.getElementById(`conversation-${id}`);
    if (!row || row.classList.contains("unread") === on) return;
    row.classList.toggle("unread", on);
    const visitor = row.querySelector(".visitor");
    if (!on) {
      visitor?.querySelector(".dot")?.remove();
      visitor?.querySelector(".visually-hidden")?.remove();
      return;
    }
    const dot = document.createElement("span");
    dot.className = "dot";
    dot.setAttribute("aria-hidden", "true");
    const said = document.createElement("span");
    said.className = "visually-hidden";
    said.textContent = "Unread: ";
    visitor?.prepend(dot, said);
  };
  const showEmpty = () => {
      if (!empty) return;
      empty.hidden = conversations.children.length > 0;
      // A row came while the focus was on the sentence: the list takes it, not the page's body.
      if (empty.hidden && document.activeElement === empty) conversations.focus({ preventScroll: true });
    };
    // The empty list shows nothing (admin.css): the focus the skip link or e (keys.js) gives it
    // goes on to the sentence saying why it is empty, which a screen reader then reads.
    conversations.addEventListener("focus", () => { if (!conversations.children.length) empty?.focus(); });
    // Sort keys are "rank.at.id" (see docs/admin.md); `recent` lists them descending, `waiting`
    // ascending, as the server's ORDER BY does.
    const keyOf = (text) => text.split(".").map(Number);
    const descending = conversations.dataset.sort !== "waiting";
    const precedes = (a, b) => {
      for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return descending ? a[i] > b[i] : a[i] < b[i];
      return false;
    };
    // The count line above the list is the server's words (docs/admin.md, "The count"), asked
    // for again, at most once a second, when rows came or went, so that it agrees with the list.
    const line = document.querySelector("[data-count][data-summary]");
    let recount = null;
    const countAgain = () => {
      if (!line || recount) return;
      recount = setTimeout(async () => {
        recount = null;
        try {
          // A session that ended answers with a redirect to the sign-in page: not a count line.
          const res = await fetch(`${line.dataset.summary}&shown=${conversations.children.length}`,
            { credentials: "same-origin", redirect: "manual" });
          if (res.ok) line.textContent = await res.text();
        } catch { /* offline: the next change asks again */ }
      }, 1000);
    };
    follow(conversations, {
      ...shared,
      conversation: (html) => {
        const item = fromHtml(html);
        const had = document.getElementById(item.id);
        had?.remove();
        const key = keyOf(item.dataset.key);
        const start = conversations.dataset.cursor;
        // A row that now sorts before this page's start belongs to an earlier page, one after
        // its last row (when more pages follow) to a later one: this page drops it.
        const next = [...conversations.children].find((li) => precedes(key, keyOf(li.dataset.key)));
        if ((start && !precedes(keyOf(start), key)) || (!next && conversations.dataset.more)) {
          showEmpty();
          countAgain();
          return;
        }
        localTime(item);
        item.classList.add("arrived");
        conversations.insertBefore(item, next || null);
        showEmpty();
        if (!had) countAgain();
      },
      removed: (id) => {
        document.getElementById(`conversation-${id}`)?.remove();
        showEmpty();
        countAgain();
      },
      // Read by this agent, here or in another tab: the row is no longer unread; marked unread
      // by them: it is again.
      read: (id) => markUnread(id, false),
      unread: (id) => markUnread(id, true),
    });
  }

  // The visitor's typing: each signal shows the line for 6 s (the protocol's expiry) unless renewed.
  const visitorTyping = document.getElementById("visitor-typing");
  let visitorTypingTimer = null;
  const showVisitorTyping = (on) => {
    clearTimeout(visitorTypingTimer);
    say(visitorTyping, on ? "Visitor is typing\u2026" : "");
    if (on) visitorTypingTimer = setTimeout(() => showVisitorTyping(false), 6000);
  };

  // Colleagues writing a reply here (docs/admin.md, "Replying takes the conversation"): each
  // signal shows them for 6 s unless renewed; their stop (on sending, a pause, a switch to a
  // note) hides them.
  const colleagueTyping = document.getElementById("colleague-typing");
  const colleagues = new Map(); // user id -> {name, timer}
  const showColleagues = () => {
    // Each name isolated, so a right-to-left one does not reorder the words around it.
    const names = [...colleagues.values()].map((c) => `\u2068${c.name}\u2069`);
    const who = names.length > 1 ? `${names.slice(0, -1).join(", ")} and ${names.at(-1)} are` : `${names[0]} is`;
    say(colleagueTyping, names.length ? `${who} replying\u2026` : "");
  };
  const colleagueTyped = ({ user, name, active }) => {
    clearTimeout(colleagues.get(user)?.timer);
    colleagues.delete(user);
    if (active) colleagues.set(user, { name, timer: setTimeout(() => colleagueTyped({ user }), 6000) });
    showColleagues();
  };

  const messages = document.getElementById("messages");
  const nearBottom = () => messages.scrollHeight - messages.scrollTop - messages.clientHeight < 80;
  // An image that loads after its message was placed makes the thread longer: keep to the end if the
  // agent was there (load events do not bubble, so they are caught on the way down).
  let atEnd = true;
  messages?.addEventListener("scroll", () => { atEnd = nearBottom(); }, { passive: true });
  messages?.addEventListener("load", (e) => {
    // In the newest message, at the end but for the image's own height counts too (a scroll event on the
    // way may have said not); an older thumbnail loading (they load lazily) never pulls a reader down.
    const newest = e.target.closest("li") === messages.lastElementChild;
    if (atEnd || (newest && messages.scrollHeight - messages.scrollTop - messages.clientHeight - e.target.offsetHeight < 80)) {
      messages.scrollTop = messages.scrollHeight;
    }
  }, true);
  const addMessage = (html) => {
    const item = fromHtml(html);
    if (!item || document.getElementById(item.id)) return; // already shown (own reply, replay)
    const stick = nearBottom();
    localTime(item);
    // Keep id order even if a replayed message arrives after a newer one.
    const id = Number(item.dataset.id);
    const after = [...messages.children].find((m) => Number(m.dataset.id) > id);
    messages.insertBefore(item, after || null);
    if (stick) messages.scrollTop = messages.scrollHeight;
    if (item.classList.contains("message-visitor")) showVisitorTyping(false);
  };
  if (messages?.dataset.live) {
    messages.scrollTop = messages.scrollHeight;
    // A message that arrives is read when the agent can see it: at once in a visible tab, else
    // when the tab becomes visible (a background tab must not tell the visitor "Seen", nor take
    // the conversation off the agent's unread counts).
    let unseenUpTo = 0;
    const markRead = () => {
      const csrf = document.querySelector("input[name=csrf]")?.value;
      if (!unseenUpTo || document.visibilityState !== "visible" || !csrf) return;
      const body = new URLSearchParams({ csrf, up_to: String(unseenUpTo) });
      unseenUpTo = 0;
      fetch(`${location.pathname}/read`, {
        method: "POST", body, credentials: "same-origin", redirect: "manual", headers: { "x-porch-fetch": "1" },
      }).catch(() => {});
    };
    document.addEventListener("visibilitychange", markRead);
    follow(messages, {
      ...shared,
      entry: (html, _source, id) => {
        addMessage(html);
        unseenUpTo = Math.max(unseenUpTo, Number(id) || 0);
        markRead();
      },
      typing: (active) => showVisitorTyping(active === "true"),
      colleague_typing: (data) => { try { colleagueTyped(JSON.parse(data)); } catch { /* not ours */ } },
      // The visitor started a newer conversation: the reply box's hint says where they answer
      // now, and "Reopen undoes it until the visitor writes again" is past (they did).
      closed_hint: (html) => {
        const hint = fromHtml(html);
        if (hint) document.getElementById("closed-hint")?.replaceWith(hint);
        const done = document.querySelector("main p.notice-success[role=status]");
        if (done?.textContent.startsWith("Conversation closed.")) done.remove();
      },
      aside: (html) => {
        const aside = fromHtml(html);
        localTime(aside);
        const old = document.getElementById("conversation-aside");
        // Replaced under the keyboard, the panel would drop its focus to the page's body: the
        // same control of the new panel takes it (its id, or a button of a form posting to the
        // same place with the same words), else the panel itself. Never another control: Enter
        // on "Take over" where "Assign" was would do what the agent did not choose.
        const had = old?.contains(document.activeElement) ? document.activeElement : null;
        const action = had?.form?.getAttribute("action");
        // An open name-and-email form keeps what was typed, and the values it was shown (so its
        // save still notices a colleague's change): it takes the new one's place.
        const editing = old?.querySelector("#edit-visitor[open]");
        if (editing) aside.querySelector("#edit-visitor")?.replaceWith(editing);
        // So do the tags being typed and the snooze being chosen (where the new panel still has
        // them: a closed conversation has no Snooze).
        for (const id of ["tag-add", "snooze-minutes", "snooze-until"]) {
          const was = old?.querySelector(`#${id}`);
          const now = aside.querySelector(`#${id}`);
          if (was && now) now.value = was.value;
        }
        // A colleague changed the status or the assignee: what this page's last action said
        // ("Conversation closed.", "Assigned to you.") is no longer so, and goes.
        const status = (panel) => panel?.querySelector(".panel p")?.textContent;
        if (status(old) !== status(aside)) document.querySelector("main .notice-success[role='status']")?.remove();
        old?.replaceWith(aside);
        if (had) {
          const again = (had.id && aside.querySelector(`#${CSS.escape(had.id)}`))
            || (action && [...aside.querySelectorAll(`form[action="${CSS.escape(action)}"] ${had.localName}`)]
              .find((el) => el.textContent === had.textContent));
          if (!again) aside.tabIndex = -1;
          (again || aside).focus();
        }
        visitorClocks(); // the new panel's clock shows the time at once, not at the next tick
        // An agent's save may have renamed the visitor: the heading and the tab title follow.
        const named = document.querySelector(".page-head h1 bdi");
        if (named && aside.dataset.visitor && named.textContent !== aside.dataset.visitor) {
          named.textContent = aside.dataset.visitor;
          document.title = `\u2068${aside.dataset.visitor}\u2069 · Porch`;
          document.dispatchEvent(new CustomEvent("porch:title", { detail: document.title }));
        }
        // The reply box says what a reply does while the conversation is closed.
        document.getElementById("closed-hint")?.toggleAttribute("hidden", aside.dataset.open === "true");
      },
      // The visitor was erased (docs/privacy.md), or the conversation was found gone (erased
      // before the stream listened, or deleted): nothing of it is left to show or to act on,
      // neither its messages nor the visitor's name and details, nor its forms.
      erased: ended("Erased visitor"),
      gone: ended("Conversation gone"),
    });
  }

  function ended(heading) {
    return (text, source) => {
      source.close();
      const note = document.createElement("p");
      note.className = "notice notice-error";
      note.setAttribute("role", "alert");
      note.textContent = text;
      messages.replaceChildren();
      messages.before(note);
      // A draft to the erased visitor has no box left to send or clear it from.
      const reply = document.getElementById("reply-form");
      if (reply) {
        const key = new URL(reply.action, location.href).pathname;
        drafts.set(key, "");
        drafts.set(key + "#kind", ""); // reply or note, kept beside the text
      }
      for (const id of ["reply-form", "visitor-typing", "colleague-typing", "email-visitor", "conversation-aside"]) {
        document.getElementById(id)?.remove();
      }
      document.querySelector(".email-visitor-off")?.remove();
      // The keys (keys.js) then say why nothing can be done here, not "closed already".
      document.body.dataset.ended = text;
      const h1 = document.querySelector(".page-head h1");
      if (h1) h1.textContent = heading;
      // The tab title named the visitor too (notify.js keeps the count in front of it).
      document.title = `${heading} · Porch`;
      document.dispatchEvent(new CustomEvent("porch:title", { detail: document.title }));
    };
  }

  // Drafts live in this tab's sessionStorage (as GitHub keeps comment drafts) from the first
  // keystroke until the server confirms it stored the message, so neither a failed send nor
  // signing in again or reloading loses them. Signing out in this tab clears them.
  const DRAFT = "porch-draft:";
  const drafts = {
    get: (key) => { try { return sessionStorage.getItem(DRAFT + key); } catch { return null; } },
    set: (key, text) => {
      try {
        if (text) sessionStorage.setItem(DRAFT + key, text); else sessionStorage.removeItem(DRAFT + key);
      } catch { /* storage full or blocked: the text is still in the box */ }
    },
    clear: () => {
      try {
        for (const key of Object.keys(sessionStorage)) if (key.startsWith(DRAFT)) sessionStorage.removeItem(key);
      } catch { /* nothing stored */ }
    },
  };
  document.querySelector('form[action="/logout"]')?.addEventListener("submit", drafts.clear);

  const form = document.getElementById("reply-form");
  if (form && messages) {
    const box = form.querySelector("textarea");
    const key = new URL(form.action, location.href).pathname;
    if (!box.value) box.value = drafts.get(key) || "";
    // Why the last send failed (reply.rs; it describes the box). An edit answers it: it goes, and
    // the box is no longer marked invalid.
    const error = document.getElementById("reply-error");
    const clearError = () => {
      error.replaceChildren();
      box.removeAttribute("aria-invalid");
    };
    box.addEventListener("input", () => {
      drafts.set(key, box.value);
      clearError();
    });
    const link = (href, text) => {
      const a = document.createElement("a");
      a.href = href;
      a.textContent = text;
      return a;
    };
    // The sign-in page comes back here, where the draft is restored with a fresh form token.
    // The agent's typing, shown to the visitor; a lost signal only means a missing "typing…".
    let typingSince = 0;
    let typingIdle = null;
    const sendTyping = (active) => {
      const body = new URLSearchParams({ csrf: form.elements.csrf.value, active: String(active) });
      fetch(form.dataset.typing, {
        method: "POST", body, credentials: "same-origin", redirect: "manual", headers: { "x-porch-fetch": "1" },
      }).catch(() => {});
    };
    const stopTyping = () => {
      clearTimeout(typingIdle);
      if (typingSince) { typingSince = 0; sendTyping(false); }
    };
    // Reply or private note: chosen before writing, and only a reply is announced as typing. The
    // choice is kept beside the draft, so a note restored after signing in again is still a note;
    // without a draft the page opens on Reply, the default: an agent back on a conversation where
    // they once added a note typed answers the visitor never got.
    const modeKey = key + "#kind";
    const mode = () => form.elements.kind.value;
    const label = form.querySelector("label[for=reply-body]");
    const showMode = () => {
      const note = mode() === "note";
      box.placeholder = note ? "Write a private note (only your team sees it)\u2026" : "Write a reply\u2026";
      label.textContent = note ? "Your private note" : "Your reply";
    };
    // Set either way: a browser that restores a form's state on reload (Firefox) would keep a note.
    form.querySelector(`[name=kind][value=${box.value && drafts.get(modeKey) === "note" ? "note" : "reply"}]`).checked = true;
    for (const radio of form.elements.kind) {
      radio.addEventListener("change", () => {
        showMode();
        drafts.set(modeKey, mode() === "note" ? "note" : "");
        if (mode() === "note") stopTyping();
      });
      // A click takes the agent on to writing; arrow keys stay in the group (announced there).
      radio.addEventListener("click", (e) => { if (e.detail > 0) box.focus(); });
    }
    showMode();
    if (form.dataset.typing) {
      box.addEventListener("input", () => {
        if (!box.value.trim() || mode() !== "reply") { stopTyping(); return; }
        if (Date.now() - typingSince >= 3000) { typingSince = Date.now(); sendTyping(true); }
        clearTimeout(typingIdle);
        typingIdle = setTimeout(stopTyping, 5000);
      });
      box.addEventListener("blur", stopTyping);
    }

    // Files for a reply (docs/widget.md, "Attachments"): each is uploaded when picked, with the form's
    // CSRF token in a header (the body is the file); the reply then names the uploads in `attachments`.
    let files = []; // {li, note, id (once stored), busy}
    const tray = document.getElementById("reply-files");
    const picker = document.getElementById("reply-file");
    const sizeText = (n) => (n < 1e3 ? `${n} bytes` : n < 1e6 ? `${Math.round(n / 1e3)} KB` : `${(n / 1e6).toFixed(1)} MB`);
    const showTray = () => {
      tray.hidden = !files.length;
      // A reply may be just files.
      box.required = !files.some((f) => f.id);
    };
    const uploadFile = async (file) => {
      const note = document.createElement("span");
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "button";
      remove.textContent = "Remove";
      remove.setAttribute("aria-label", `Remove ${file.name}`);
      const li = document.createElement("li");
      li.append(`${file.name} (${sizeText(file.size)}) `, note, remove);
      const entry = { li, busy: true };
      remove.addEventListener("click", () => { files = files.filter((f) => f !== entry); li.remove(); showTray(); });
      files.push(entry);
      tray.append(li);
      showTray();
      note.textContent = "uploading\u2026";
      try {
        const res = await fetch(`${form.dataset.attachments}?name=${encodeURIComponent(file.name)}`, {
          method: "POST", body: file, credentials: "same-origin", redirect: "manual",
          headers: { "x-porch-csrf": form.elements.csrf.value },
        });
        const answer = await res.json().catch(() => null);
        if (res.status === 201 && answer?.id) {
          entry.id = answer.id;
          note.textContent = "ready";
        } else {
          li.dataset.failed = "";
          note.textContent = `not uploaded: ${answer?.error?.message || `the server answered ${res.status}.`}`;
        }
      } catch {
        li.dataset.failed = "";
        note.textContent = "not uploaded: no answer from the server.";
      }
      entry.busy = false;
      showTray();
    };
    if (tray && picker && form.dataset.attachments) {
      picker.closest(".reply-attach").hidden = false;
      picker.addEventListener("change", () => {
        for (const file of picker.files) uploadFile(file);
        picker.value = "";
      });
    }

    const here = location.pathname + location.search;
    const signIn = () => link(`/login?next=${encodeURIComponent(here)}`, "Sign in");
    const reload = () => link(here, "Reload");

    // What went wrong, in words, from an answer that is not the message fragment.
    const failure = async (res) => {
      let code = "", message = "";
      if ((res.headers.get("content-type") || "").startsWith("application/json")) {
        try { ({ code, message } = (await res.json()).error); } catch { /* no usable body */ }
      }
      if (res.status === 401 || res.type === "opaqueredirect") {
        // A redirect from a write is a sign-in wall (ours answers 401; a proxy may redirect).
        return ["Signed out: sign in again, your text is kept. ", signIn()];
      }
      if (code === "form_expired") {
        return ["This page is out of date (you signed in again since it was opened): reload it, your text is kept. ",
          reload()];
      }
      if (res.status >= 500) {
        return [`Not sent: the server could not store it (${res.status}). Try again in a moment; your text is kept.`];
      }
      if (res.ok) {
        // 200 but not our fragment: the server may have stored it, so say what we know.
        return ["Not confirmed: the server's answer was not the message. Reload to see whether it arrived; your text is kept. ",
          reload()];
      }
      return [`Not sent: ${message || `the server answered ${res.status}.`} Your text is kept.`];
    };

    // Each message has its own id (the page's first one is in the form): a resend of the same
    // text after a lost answer stores nothing new, and edited text is a new message.
    const newId = () => Array.from(crypto.getRandomValues(new Uint8Array(16)),
      (b) => b.toString(16).padStart(2, "0")).join("");
    let idTried = null; // what was last sent under the current id

    let sending = false;
    const send = async (kind) => {
      const ready = files.filter((f) => f.id);
      if (sending) return;
      // Nothing to send: Enter does nothing, but an earlier failure is no longer news.
      if (!box.value.trim() && (kind === "note" || !ready.length)) {
        clearError();
        return;
      }
      if (files.some((f) => f.busy)) { error.replaceChildren("Wait until the files are uploaded."); return; }
      if (kind === "note" && ready.length) {
        error.replaceChildren("Notes carry no files: send them with a reply, or remove them.");
        return;
      }
      sending = true;
      stopTyping();
      clearError();
      const body = new URLSearchParams(new FormData(form));
      body.set("kind", kind);
      body.delete("attachments");
      if (ready.length) body.set("attachments", ready.map((f) => f.id).join(","));
      const attempt = [kind, body.get("attachments"), box.value].join("\n");
      if (idTried !== null && idTried !== attempt) form.elements.client_id.value = newId();
      body.set("client_id", form.elements.client_id.value);
      idTried = attempt;
      // The text stays in the box (read-only meanwhile) until the server confirms it stored it.
      const text = box.value;
      drafts.set(key, text);
      box.readOnly = true;
      form.setAttribute("aria-busy", "true");
      try {
        let res;
        try {
          res = await fetch(form.action, {
            method: "POST", body, credentials: "same-origin", redirect: "manual",
            headers: { "x-porch-fetch": "1" },
          });
        } catch {
          // The request may or may not have reached the server: the live stream shows it if so.
          error.append("No answer from the server: check your connection. Your text is kept: " +
            "send it again, it will not be posted twice.");
          return;
        }
        const item = res.status === 200 && res.headers.get("x-porch-fragment") === "message"
          ? fromHtml(await res.text()) : null;
        if (!item?.matches("li.message[id^='message-']")) {
          error.append(...await failure(res));
          // 422: the server refused the text itself (empty or too long), so the box is invalid.
          if (res.status === 422) box.setAttribute("aria-invalid", "true");
          return;
        }
        addMessage(item.outerHTML);
        messages.scrollTop = messages.scrollHeight;
        form.elements.client_id.value = newId();
        idTried = null;
        box.value = "";
        drafts.set(key, "");
        drafts.set(modeKey, "");
        if (ready.length) {
          for (const f of ready) f.li.remove();
          files = files.filter((f) => !ready.includes(f));
          showTray();
        }
      } finally {
        box.readOnly = false;
        form.removeAttribute("aria-busy");
        sending = false;
        box.focus();
      }
    };
    // A touch screen's only pointer is coarse (a phone, a tablet): its keyboard has no
    // Shift+Enter, so there Enter starts a new line and the Send button sends.
    const touchOnly = window.matchMedia("(pointer: coarse) and (not (any-pointer: fine))");
    box.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing && !touchOnly.matches) {
        e.preventDefault();
        send(mode());
      }
    });
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      // The pressed button decides where a browser without :has() shows both (admin.css).
      const pressed = e.submitter?.classList;
      send(pressed?.contains("note-send") ? "note" : pressed?.contains("reply-send") ? "reply" : mode());
    });
  }

  for (const button of document.querySelectorAll("[data-copy]")) {
    button.addEventListener("click", async () => {
      const field = document.getElementById(button.dataset.copy);
      const said = button.parentElement.querySelector("[data-copied]");
      try {
        await navigator.clipboard.writeText(field.value);
      } catch {
        field.select();
        document.execCommand("copy");
      }
      if (said) said.textContent = "Copied.";
    });
  }

  // The same element keeps its place (and stays the live region a screen reader follows): only
  // its attributes and children change.
  const updateInPlace = (current, fresh) => {
    for (const { name } of [...current.attributes]) {
      if (!fresh.hasAttribute(name)) current.removeAttribute(name);
    }
    for (const { name, value } of fresh.attributes) current.setAttribute(name, value);
    current.replaceChildren(...fresh.childNodes);
  };

  const refreshing = document.querySelector("[data-refresh]");
  if (refreshing) {
    const every = Math.max(1, Number(refreshing.dataset.refreshEvery) || 5) * 1000;
    // Each refresh is scheduled after the previous one finished, so a slow answer can never be
    // overtaken by a newer one and then replace it.
    const refresh = async () => {
      if (document.hidden) return;
      try {
        const res = await fetch(refreshing.dataset.refresh, { credentials: "same-origin" });
        // A redirect means the session ended: keep what is shown rather than a sign-in page.
        if (!res.ok || res.redirected) { setLive(false); return; }
        const html = new DOMParser().parseFromString(await res.text(), "text/html");
        // data-refresh-with names more elements the same rendering brings (a destination's
        // health beside its test's outcome), read before the update may take the attribute away.
        const also = (refreshing.dataset.refreshWith || "").split(" ").filter(Boolean);
        for (const id of [refreshing.id, ...also]) {
          const current = document.getElementById(id);
          const fresh = html.getElementById(id);
          if (current && fresh) {
            localTime(fresh);
            updateInPlace(current, fresh);
          }
        }
        setLive(true);
      } catch {
        setLive(false);
      }
    };
    const loop = async () => {
      await refresh();
      if (refreshing.dataset.refresh) setTimeout(loop, every);
    };
    setTimeout(loop, every);
  }

  // A declaration, so the live aside handler above can call it too.
  function visitorClocks() {
    for (const clock of document.querySelectorAll(".visitor-clock[data-time-zone]")) {
      const zone = clock.dataset.timeZone;
      try {
        const time = new Date().toLocaleTimeString([], { timeZone: zone, timeStyle: "short" });
        clock.textContent = time + " (" + zone + ")";
      } catch {
        clock.textContent = zone; // a zone this browser does not know
      }
    }
  }
  if (document.getElementById("conversation-aside")) {
    visitorClocks();
    setInterval(visitorClocks, 15000);
  }

  for (const swatch of document.querySelectorAll(".swatch[data-color]")) {
    swatch.style.backgroundColor = swatch.dataset.color;
  }
})();
