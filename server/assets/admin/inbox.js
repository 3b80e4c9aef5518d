// Porch admin: live updates and small conveniences. Every page works without this script.
// - A list with data-live (inbox or conversation) follows a Server-Sent Events stream of HTML
//   fragments rendered by the server; on reconnect the browser sends Last-Event-ID and the
//   server replays what was missed. The inbox places each row by its sort key, within the page.
// - The reply box is reply.js's; it sends through this thread and its drafts (window.porchInbox).
// - Typing: "Visitor is typing…" shows for 6 s per signal; a colleague writing a reply here shows
//   as "Ana is replying…" until their stop or for 6 s.
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
  // A tab in the background closes it and opens it again when shown (streams.js): the stream
  // then resumes after the last message id it had, like a reconnect.
  const follow = (list, handlers) => {
    let lastId = list.dataset.lastId || "0";
    let failures = 0;
    const connect = (stream) => {
      const sep = list.dataset.live.includes("?") ? "&" : "?";
      const source = new EventSource(`${list.dataset.live}${sep}after=${encodeURIComponent(lastId)}`);
      stream.source = source;
      // data-state says whether the list follows the server right now ("live") or not.
      source.onopen = () => { failures = 0; setLive(true); list.dataset.state = "live"; };
      source.onerror = () => {
        setLive(false);
        list.dataset.state = "reconnecting";
        if (source.readyState !== EventSource.CLOSED) return;
        const wait = Math.min(30000, 3000 * 2 ** failures++);
        document.dispatchEvent(new CustomEvent("porch:stream-closed", { detail: () => stream.later(wait) }));
      };
      for (const [name, handle] of Object.entries(handlers)) {
        source.addEventListener(name, (e) => {
          if (e.lastEventId) lastId = e.lastEventId;
          handle(e.data, source, e.lastEventId);
        });
      }
    };
    window.porchStream(connect, () => { list.dataset.state = "paused"; });
    // Shown again after a pause, failures start again from the shortest wait.
    document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") failures = 0; });
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
      // Read before hiding it: a hidden element loses the focus, to the page's body.
      const hadFocus = document.activeElement === empty;
      empty.hidden = conversations.children.length > 0;
      // A row came while the focus was on the sentence: the list takes it, not the page's body.
      if (empty.hidden && hadFocus) conversations.focus({ preventScroll: true });
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
    // The server leaves the conversation on screen out of the counts and sends apart, as
    // `here`, what it adds now (zero once read, here or anywhere else). A visible tab reads its
    // messages as they come, so it adds nothing; a tab in the background adds `here`, so its
    // title (and the tabs it passes its counts to) count a visitor message it holds unseen.
    let counts = null;
    const showCounts = () => {
      if (!counts) return;
      const hidden = document.visibilityState === "hidden";
      const shown = { ...counts };
      delete shown.here;
      for (const k of ["open", "mine", "unassigned", "needs"]) shown[k] += hidden ? counts.here?.[k] || 0 : 0;
      document.dispatchEvent(new CustomEvent("porch:counts", { detail: shown }));
    };
    const addsHere = () => ["open", "mine", "unassigned", "needs"].some((k) => counts?.here?.[k]);
    const markRead = () => {
      const csrf = document.querySelector("input[name=csrf]")?.value;
      if (!unseenUpTo || document.visibilityState !== "visible" || !csrf) return;
      const body = new URLSearchParams({ csrf, up_to: String(unseenUpTo) });
      unseenUpTo = 0;
      fetch(`${location.pathname}/read`, {
        method: "POST", body, credentials: "same-origin", redirect: "manual", headers: { "x-porch-fetch": "1" },
      }).catch(() => {});
    };
    // Shown or hidden: `here` leaves or joins the counts. Only a live stream's counts are
    // current: a paused one sends fresh ones as it opens again.
    document.addEventListener("visibilitychange", () => {
      markRead();
      if (addsHere() && messages.dataset.state === "live") showCounts();
    });
    follow(messages, {
      ...shared,
      counts: (data) => {
        try { counts = JSON.parse(data); } catch { return; }
        showCounts();
      },
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
  // reply.js, loaded after this on a conversation page, sends through the same thread and drafts.
  window.porchInbox = { fromHtml, addMessage, drafts };

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
