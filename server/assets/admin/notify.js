// Porch admin: never miss a chat. On every signed-in page this keeps the agent's unread counts
// (the tab title "(3) Inbox · Porch", a dot on the favicon, the navigation and the inbox tabs)
// and, when the agent turned them on in this browser, a short beep and a desktop notification
// for a visitor message in an unassigned or own conversation, or a colleague assigning you a
// conversation or taking yours (docs/admin.md, "Never miss a chat"). Counts and alerts come
// from the page's live stream (inbox.js passes them on as porch:counts and porch:alert events)
// or, on pages without one, from /inbox/counts. It also
// keeps the navigation's current section, and a page's current tab, in view where their bar
// scrolls sideways (phones).
(() => {
  "use strict";

  // Centred once the bar has its final width: the first counts widen it (a badge), as the
  // fonts may; later counts leave alone a bar the agent may have scrolled.
  const bars = [...document.querySelectorAll(".topbar nav, nav.tabs")];
  const showCurrent = () => {
    for (const bar of bars) {
      const current = bar.querySelector("[aria-current=page]");
      if (!current || bar.scrollWidth <= bar.clientWidth) continue;
      const from = bar.getBoundingClientRect().left;
      bar.scrollLeft += current.getBoundingClientRect().left - from - (bar.clientWidth - current.offsetWidth) / 2;
    }
  };
  showCurrent();
  addEventListener("load", showCurrent, { once: true });
  document.addEventListener("porch:counts", () => requestAnimationFrame(showCurrent), { once: true });

  // Per-browser choices and cross-tab bookkeeping live in localStorage; without it (blocked),
  // alerts are off and the counts still work.
  const store = {
    get: (k) => { try { return localStorage.getItem(k); } catch { return null; } },
    set: (k, v) => { try { localStorage.setItem(k, v); } catch { /* blocked: nothing kept */ } },
    remove: (k) => { try { localStorage.removeItem(k); } catch { /* blocked */ } },
    keys: () => { try { return Object.keys(localStorage); } catch { return []; } },
  };
  const SOUND = "porch-sound";
  const DESKTOP = "porch-desktop";
  const ALERTED = "porch-alerted"; // the newest message id some tab of this browser alerted for
  const LOOKING = "porch-looking:"; // + a tab id: {id, at} while that tab shows a conversation

  // --- counts: title, favicon, navigation and tabs

  // The page's own title, which the count goes in front of; a page may change it (an erased
  // visitor's conversation drops their name) with a `porch:title` event.
  let baseTitle = document.title;
  let needs = 0;
  const showTitle = () => { document.title = needs > 0 ? `(${needs}) ${baseTitle}` : baseTitle; };
  document.addEventListener("porch:title", (e) => { baseTitle = String(e.detail); showTitle(); });
  const icon = document.querySelector('link[rel="icon"]');
  const plainIcon = icon?.getAttribute("href");
  let badgedIcon = null;
  const setBadge = async (on) => {
    if (!icon) return;
    if (on && !badgedIcon) {
      try {
        const svg = await (await fetch(plainIcon, { credentials: "same-origin" })).text();
        badgedIcon = "data:image/svg+xml," + encodeURIComponent(svg.replace("</svg>",
          '<circle cx="24" cy="8" r="7" fill="#dc2626" stroke="#fff" stroke-width="2"/></svg>'));
      } catch { return; }
    }
    icon.setAttribute("href", on ? badgedIcon : plainIcon);
  };
  // An inbox filtered to one site shows that site's counts on its tabs (the counts' `site`,
  // from its own stream); counts without them (passed on from another tab while its stream is
  // paused) hide its tabs' numbers rather than leave old ones.
  const siteTabs = document.querySelector("nav.tabs[data-site]");
  document.addEventListener("porch:counts", (e) => {
    const counts = e.detail || {};
    const site = counts.site && String(counts.site.id) === siteTabs?.dataset.site ? counts.site : null;
    for (const el of document.querySelectorAll("[data-unread]")) {
      const onTab = siteTabs?.contains(el);
      if (onTab && !site) {
        el.hidden = true;
        continue;
      }
      const n = Number((onTab ? site : counts)[el.dataset.unread]) || 0;
      el.querySelector("[data-n]").textContent = String(n);
      el.hidden = n === 0;
    }
    needs = Number(counts.needs) || 0;
    document.body.dataset.needs = String(needs); // the counts are known (and live) from here on
    showTitle();
    setBadge(needs > 0);
  });

  // --- who is looking at which conversation, across this browser's tabs

  const here = location.pathname.match(/^\/conversations\/(\d+)$/)?.[1];
  const tab = LOOKING + Math.random().toString(36).slice(2);
  const isShown = (id) => here === String(id) && document.visibilityState === "visible";
  if (here) {
    const beat = () => {
      if (document.visibilityState === "visible") store.set(tab, JSON.stringify({ id: here, at: Date.now() }));
      else store.remove(tab);
    };
    beat();
    setInterval(beat, 2000);
    document.addEventListener("visibilitychange", beat);
    addEventListener("pagehide", () => store.remove(tab));
  }
  const someTabShows = (id) => isShown(id) || store.keys().some((k) => {
    if (!k.startsWith(LOOKING)) return false;
    try {
      const v = JSON.parse(store.get(k));
      return v.id === String(id) && Date.now() - v.at < 5000;
    } catch { return false; }
  });

  // --- sound: a short generated beep (Web Audio), no asset

  let audio = null;
  const beep = () => {
    try {
      audio ||= new AudioContext();
      const t = audio.currentTime;
      const osc = audio.createOscillator();
      const gain = audio.createGain();
      osc.frequency.value = 880;
      gain.gain.setValueAtTime(0.0001, t);
      gain.gain.exponentialRampToValueAtTime(0.2, t + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, t + 0.25);
      osc.connect(gain).connect(audio.destination);
      osc.start(t);
      osc.stop(t + 0.3);
    } catch { /* no audio here */ }
  };
  // Browsers start audio only after a gesture on the page: the first one unlocks it.
  const unlock = () => { if (store.get(SOUND) === "on") { audio ||= new AudioContext(); audio.resume(); } };
  addEventListener("pointerdown", unlock, { once: true });
  addEventListener("keydown", unlock, { once: true });

  // --- desktop notifications

  const canNotify = () => "Notification" in window && Notification.permission === "granted" &&
    store.get(DESKTOP) === "on";
  // A colleague giving you a conversation or taking yours, or a snooze running out (the body
  // names the visitor and what happened).
  const TITLES = { assigned: "Assigned to you", unassigned: "No longer yours", woke: "Snooze ended" };
  const notify = (a) => {
    const note = new Notification(TITLES[a.kind] || (a.is_new ? "New conversation" : "New message"), {
      body: a.body, tag: `porch-conversation-${a.conversation}`,
    });
    note.onclick = () => {
      window.focus();
      location.assign(`/conversations/${a.conversation}`);
      note.close();
    };
  };

  // Every open tab gets the alert at the same moment; the first to claim its message id speaks
  // for them all. The claim is a Web Lock named after the message, taken only if free and held a
  // few seconds (a read then a write of localStorage is not one step across tabs); the id kept in
  // localStorage stops a tab that hears of the message later.
  const HOLD_MS = 5000;
  const speak = (a) => {
    if (Number(store.get(ALERTED)) >= a.message) return;
    store.set(ALERTED, String(a.message));
    if (store.get(SOUND) === "on") beep();
    if (canNotify()) notify(a);
  };
  document.addEventListener("porch:alert", (e) => {
    const a = e.detail;
    if (!a || typeof a.message !== "number" || someTabShows(a.conversation)) return;
    if (!navigator.locks) { speak(a); return; }
    navigator.locks.request(`porch-alert-${a.message}`, { ifAvailable: true }, async (lock) => {
      if (!lock) return; // another tab has it
      speak(a);
      await new Promise((done) => setTimeout(done, HOLD_MS));
    });
  });

  // --- the switches in the top bar

  const switches = document.querySelector("[data-alert-switches]");
  if (switches) {
    const sound = switches.querySelector("[data-sound]");
    const desktop = switches.querySelector("[data-desktop]");
    const paint = () => {
      sound.setAttribute("aria-pressed", String(store.get(SOUND) === "on"));
      desktop.setAttribute("aria-pressed", String(canNotify()));
    };
    sound.addEventListener("click", () => {
      const on = store.get(SOUND) !== "on";
      store.set(SOUND, on ? "on" : "off");
      if (on) beep(); // a sample, and this click unlocks audio
      paint();
    });
    desktop.addEventListener("click", async () => {
      if (!("Notification" in window)) {
        desktop.title = "This browser has no desktop notifications.";
        return;
      }
      if (canNotify()) {
        store.set(DESKTOP, "off");
      } else {
        const answer = await Notification.requestPermission();
        store.set(DESKTOP, answer === "granted" ? "on" : "off");
        desktop.title = answer === "denied" ? "Notifications are blocked for this site in the browser's settings." : "";
      }
      paint();
    });
    paint();
    // Switched in another tab of this browser: this tab's switches say so too.
    addEventListener("storage", (e) => { if (e.key === SOUND || e.key === DESKTOP || e.key === null) paint(); });
    switches.hidden = false;
  }

  // --- the stream, on pages without a live list of their own

  if (!document.querySelector("#conversations[data-live], #messages[data-live]")) {
    const relay = (name) => (e) => {
      try { document.dispatchEvent(new CustomEvent(name, { detail: JSON.parse(e.data) })); } catch { /* ignore */ }
    };
    // A tab in the background closes it and opens it again when shown (streams.js).
    const connect = (stream) => {
      const source = new EventSource("/inbox/counts");
      stream.source = source;
      source.addEventListener("counts", relay("porch:counts"));
      source.addEventListener("alert", relay("porch:alert"));
      source.onerror = () => {
        if (source.readyState === EventSource.CLOSED) streamClosed(() => stream.later(30000));
      };
    };
    window.porchStream(connect);
  }

  // --- a stream that ended with an error answer: signed out, or the server's trouble
  // EventSource retries network errors by itself, not an error answer. Each page's stream (this
  // script's, inbox.js's) reports such an end with `porch:stream-closed` and a function that
  // reconnects; a request marked X-Porch-Fetch tells which it is (401 when the session is gone).
  let signedOut = false;
  const isSignedOut = async () => {
    try {
      // `/account`: every signed-in user may open it, and reading it changes nothing (a HEAD of a
      // conversation page would mark the conversation read).
      const r = await fetch("/account", { method: "HEAD", headers: { "X-Porch-Fetch": "1" },
        redirect: "manual", cache: "no-store" });
      return r.status === 401 || r.type === "opaqueredirect";
    } catch { return false; } // no answer: the network, which the reconnect will meet again
  };
  // Says so once, instead of the counts and "Reconnecting…": nothing on the page is live any more.
  const showSignedOut = () => {
    signedOut = true;
    window.porchStreamsEnd?.(); // this tab's streams, and its keeper's lease if it held it
    needs = 0;
    showTitle();
    setBadge(false);
    for (const el of document.querySelectorAll("[data-unread]")) el.hidden = true;
    for (const el of document.querySelectorAll("[data-live-status]")) el.textContent = "";
    const note = document.createElement("p");
    note.className = "notice notice-error";
    note.setAttribute("role", "alert");
    note.dataset.signedOut = "";
    const link = document.createElement("a");
    link.href = `/login?next=${encodeURIComponent(location.pathname + location.search)}`;
    link.textContent = "Sign in";
    note.append("Signed out: this page is no longer live. ", link);
    document.querySelector("main")?.prepend(note);
  };
  const streamClosed = async (reconnect) => {
    if (signedOut) return;
    if (await isSignedOut()) showSignedOut();
    else reconnect();
  };
  document.addEventListener("porch:stream-closed", (e) => streamClosed(e.detail));
})();
