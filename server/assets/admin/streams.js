// Porch admin: the pages' live streams, within the browser's connection budget
// (docs/admin.md, "Live updates"). Over HTTP/1.1 a browser opens at most six connections to a
// host, and every signed-in page holds a stream: a seventh tab, or a reply sent from any of
// them, waited silently for a free connection (HTTP/2 behind a TLS proxy has no such limit).
// So a tab left in the background closes its stream after HIDDEN_MS, and opens it again,
// resuming where it stopped, when it is shown. One tab of the browser, the keeper (a lease in
// localStorage, renewed every few seconds, taken over when its tab goes), keeps its stream in
// the background too: its alerts sound, and the counts it gets reach the other tabs' titles
// through localStorage. Without localStorage every tab keeps its stream, as before.
(() => {
  "use strict";

  const HIDDEN_MS = 10000;
  const LEASE = "porch-stream-keeper"; // {tab, at}: the keeper and when it last renewed
  const COUNTS = "porch-counts"; // the keeper's latest counts, for the tabs without a stream
  // Longer than a minute: Chromium runs a long-hidden tab's timers once a minute, the keeper's too.
  const LEASE_MS = 75000;
  const RENEW_MS = 5000;
  const me = Math.random().toString(36).slice(2);

  // True while this tab is the keeper: it renews the lease, or takes it when nobody holds it or
  // its holder stopped renewing (closed, or a frozen tab). Two tabs taking a free lease at once
  // sort it out at the next renewal: each then sees the other's fresh lease, and one gives way.
  // A tab whose streams ended (signed out) holds no lease: its alerts could not come.
  let ended = false;
  const keep = () => {
    if (ended) return false;
    try {
      const held = JSON.parse(localStorage.getItem(LEASE) || "null");
      if (held && held.tab !== me && Date.now() - held.at < LEASE_MS) return false;
      localStorage.setItem(LEASE, JSON.stringify({ tab: me, at: Date.now() }));
    } catch { /* no storage: every tab keeps its stream */ }
    return true;
  };
  const release = () => {
    try {
      if (JSON.parse(localStorage.getItem(LEASE) || "null")?.tab === me) localStorage.removeItem(LEASE);
    } catch { /* nothing to hand over */ }
  };
  let keeper = keep();

  const streams = [];
  const isHidden = () => document.visibilityState === "hidden";
  // Opens the stream now: whatever it had open or planned goes first, so a stream never runs twice.
  const open = (stream) => {
    clearTimeout(stream.timer);
    stream.source?.close();
    stream.source = null;
    stream.paused = false;
    stream.connect(stream);
  };
  const pause = (stream) => {
    if (stream.paused || keeper) return;
    clearTimeout(stream.timer);
    stream.paused = true;
    stream.source?.close();
    stream.onPause?.();
  };
  const resume = (stream) => { if (stream.paused && !ended) open(stream); };

  // Follows a stream: `connect(stream)` opens it and sets `stream.source`; after an error it asks
  // for another try with `stream.later(ms)`, which a pause cancels and a resume replaces. A tab
  // that loads in the background (a restored session) opens it only when shown, unless it is
  // the keeper. `onPause` is told when the tab closed it.
  window.porchStream = (connect, onPause) => {
    const stream = { source: null, paused: false, timer: null, connect, onPause };
    stream.later = (ms) => {
      clearTimeout(stream.timer);
      stream.timer = setTimeout(() => { if (!stream.paused && !ended) open(stream); }, ms);
    };
    streams.push(stream);
    if (isHidden() && !keeper) {
      stream.paused = true;
      onPause?.();
    } else {
      open(stream);
    }
    return stream;
  };
  // Signed out: nothing on the page is live any more, and the lease goes to a tab that can be.
  window.porchStreamsEnd = () => {
    ended = true;
    keeper = false;
    for (const stream of streams) {
      clearTimeout(stream.timer);
      stream.source?.close();
    }
    release();
  };

  let hiddenSince = isHidden() ? Date.now() : null;
  let hideTimer = null;
  document.addEventListener("visibilitychange", () => {
    clearTimeout(hideTimer);
    if (isHidden()) {
      hiddenSince = Date.now();
      hideTimer = setTimeout(() => streams.forEach(pause), HIDDEN_MS);
    } else {
      hiddenSince = null;
      streams.forEach(resume);
    }
  });
  setInterval(() => {
    keeper = keep();
    // The keeper went (its tab closed): this one keeps its stream from now on; a tab that is
    // no longer the keeper closes its stream if it has been in the background long enough.
    if (keeper) streams.forEach(resume);
    else if (hiddenSince !== null && Date.now() - hiddenSince >= HIDDEN_MS) streams.forEach(pause);
  }, RENEW_MS);
  // A keeper closing hands over at once rather than when its lease runs out.
  addEventListener("pagehide", release);

  // The counts, from the tab whose stream has them to those whose stream is closed.
  document.addEventListener("porch:counts", (e) => {
    if (!e.detail?.relayed) try { localStorage.setItem(COUNTS, JSON.stringify(e.detail)); } catch { /* none */ }
  });
  addEventListener("storage", (e) => {
    if (e.key !== COUNTS || !e.newValue || !streams.some((s) => s.paused)) return;
    try {
      const counts = { ...JSON.parse(e.newValue), relayed: true };
      document.dispatchEvent(new CustomEvent("porch:counts", { detail: counts }));
    } catch { /* not ours */ }
  });
})();
