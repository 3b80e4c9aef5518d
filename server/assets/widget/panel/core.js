// Porch chat panel, served as /widget/panel.js: this file and the other parts of this directory, which
// server/src/widget/panel_source.rs puts in one async function, in its order; they share its scope. This part:
// the constants, the language and storage.
// Loaded by the launcher (launcher.js) on the visitor's click; it takes the config and the
// launcher's shadow root from window.__porch, draws the panel inside that shadow root and speaks the widget
// protocol (docs/widget-protocol.md). All server and visitor text goes into the page with textContent
// (or text nodes) only. Nothing here may throw into the host page. The files are pure ASCII (non-ASCII text
// as \u escapes), so they read right whatever charset the host page or a proxy imposes. Every visitor-facing
// string goes through t(key, vars); other languages are fetched once, before the panel is drawn.
  "use strict";
  const P = window.__porch;
  if (!P || P.toggle) return; // not ours, or already running

  const { c, root } = P;
  const TYPING_MS = 6000; // the protocol: typing expires after 6 s unless repeated
  const MAX_BODY = 4000;
  const MAX_BACKOFF_MS = 30000;
  const ANSWER_WAIT_MS = 10000; // no welcome, ack or pong this long after asking: the socket is presumed dead
  const OPEN_WAIT_MS = 20000; // a socket not open this long after it was made is given up
  const QUIET_MS = 25000; // nothing heard this long on a live socket: ask whether it still is (ping)
  const FATAL_CLOSE = 1008; // site unknown, origin not allowed, bad version: never reconnect
  const WAIT_CODES = new Set(["rate_limited", "site_busy", "too_many_conversations", "busy", "unavailable"]);
  const key = (name) => `porch:${c.site}:${name}`;

  // --- language (docs/widget.md, "Languages"). EN, with the error texts of locales/errors-en.json, is the
  // source every locales/*.json file translates, key for key with the same {placeholders}
  // (server/src/widget/locales.rs tests it); it is JSON so the test can read it. A key a locale lacks shows
  // in English. An error in English shows the server's own words, so their English sources are not here.
  const EN = {
    "launcher": "Chat with us",
    "close": "Close chat",
    "your_data": "Your data",
    "messages": "Messages",
    "placeholder": "Write a message\u2026",
    "your_message": "Your message",
    "send": "Send",
    "email_offer": "Away when we answer? Get the reply by email:",
    "save": "Save",
    "email_saved": "Thanks! Replies will also go to {email}.",
    "bad_email": "Please check the email address.",
    "agent": "Agent",
    "typing": "{name} is typing",
    "sending": "Sending\u2026",
    "sent": "Sent",
    "seen": "Seen",
    "not_sent": "Not sent",
    "closed": "This conversation was closed. Write again any time to start a new one.",
    "reopened": "This conversation was reopened.",
    "connecting": "Connecting\u2026",
    "connected": "Connected",
    "reconnecting": "Reconnecting in {s} s\u2026",
    "offline": "Offline, waiting for the network\u2026",
    "unavailable": "Chat is unavailable",
    "wait": "Please wait {s} s.",
    "too_long": "Messages can be at most {max} characters.",
    "download_json": "Download this conversation (JSON)",
    "download_text": "Download this conversation (text)",
    "erase": "Delete my data",
    "erase_ask": "Delete all your messages and details from this chat? This cannot be undone.",
    "erase_confirm": "Delete",
    "cancel": "Cancel",
    "nothing_stored": "Nothing is stored about you yet.",
    "erased": "Your data was deleted.",
    "error": "Something went wrong.",
    "attach": "Attach files",
    "files": "Files to send",
    "remove_file": "Remove {name}",
    "uploading": "Uploading {pct}%",
    "ready": "Ready to send",
    "upload_waiting": "Waiting for the connection\u2026",
    "files_busy": "Please wait until your files are uploaded.",
    "too_many_files": "At most {max} files per message.",
    "drop": "Drop files to attach them",
    "file_gone": "This file is no longer available.",
    "f_too_large": "Too big: files can be at most {max}.",
    "f_unsupported_type": "This kind of file cannot be sent (images, PDF and text only).",
    "f_damaged_image": "This image is damaged and cannot be sent.",
    "f_image_too_large": "This image is too large (at most 50 megapixels).",
    "f_empty_upload": "This file is empty.",
    "f_attachments_off": "This chat does not accept files.",
    "f_rate_limited": "Too many files at once. Please try again in a moment.",
    "f_failed": "Upload failed. Please try again.",
    "kb": "{n} KB",
    "mb": "{n} MB",
    "back_on": "We're back on {day} at {time}.",
    "back_at": "We're back at {time}.",
    "away_reply": "We'll reply by email.",
    "away_ask": "We're away. Leave your email and we'll reply there:",
    "email_held": "Thanks! Once you've written, replies will also go to {email}.",
    "your_name": "Your name",
    "your_email": "Your email",
    "optional": "{label} (optional)",
    "prechat_missing": "Please fill in the required fields.",
    "unread": "{label} (new reply)",
    "new_reply": "New reply from {name}.",
    "chars_left": "{n} characters left.",
    "reconnect": "Reconnecting\u2026"
  };
  const LOCALES = ["en", "de", "fr", "es", "pt", "it", "nl", "pl", "tr", "ja", "zh", "ar", "he"];
  // The site's choice (c.locale) wins, then the browser's languages in order, matched on the language
  // alone (pt-BR is pt, zh-CN and zh-Hans are zh); Chinese in the Traditional script is not offered the
  // Simplified texts. `tag` is what dates are written in: the browser's own tag when it matched (so
  // en-GB keeps 14:05), else the language.
  const [wanted, tag] = (() => {
    for (const want of [c.locale, ...(navigator.languages || [navigator.language])]) {
      const low = typeof want === "string" ? want.toLowerCase() : "";
      const base = low.split("-")[0];
      if (!LOCALES.includes(base) || (base === "zh" && /-(hant|tw|hk|mo)\b/.test(low))) continue;
      try { return [base, Intl.DateTimeFormat.supportedLocalesOf(want)[0] || base]; } catch { return [base, base]; }
    }
    return ["en", "en"];
  })();
  // Until the language is here, a click or Porch.open/close only changes what the panel will do.
  P.state(P.open === true);
  P.toggle = () => { P.open = !P.open; P.focus = true; P.state(P.open); };
  let S = {};
  // The language the panel's texts are in, for its lang and dir.
  let lang = "en";
  if (wanted !== "en") {
    // Blocked (CSP connect-src), missing, slow or broken: English, silently.
    try {
      S = await Promise.race([fetch(`${c.url}/widget/locales/${wanted}.json`).then((r) => (r.ok ? r.json() : {})),
        new Promise((ok) => { setTimeout(ok, 4000, {}); })]) || {};
      if (typeof S.send === "string") lang = wanted;
    } catch {}
  }
  // The site's own text (greeting, away message) in the panel's language if it wrote one (docs/widget.md, "Languages").
  const ownText = (texts, text) => (texts && typeof texts[wanted] === "string" && texts[wanted]) || text;
  const t = (k, vars = {}) => (typeof S[k] === "string" ? S[k] : EN[k]).replace(/\{(\w+)\}/g, (m, n) => vars[n] ?? m);
  // A server's error in the visitor's language when the locale knows its code, else as the server wrote it
  // (the e_* texts of EN are the server's, for translators; f_* are the panel's words for refused uploads).
  const errorText = (code, message) => (typeof S[`e_${code}`] === "string" ? S[`e_${code}`] : message || t("error"));
  const wsUrl = `${c.url.replace(/^http/, "ws")}/widget/ws?site=${encodeURIComponent(c.site)}`;

  // --- storage: localStorage may be off or full; the chat still works for this page then.

  const memory = {};
  const read = (k) => {
    try { return localStorage.getItem(k); } catch { return memory[k] ?? null; }
  };
  const write = (k, v) => {
    try {
      if (v == null) localStorage.removeItem(k); else localStorage.setItem(k, v);
    } catch { memory[k] = v; }
  };
  // JSON that ignores a host page's Array.prototype.toJSON (Prototype.js 1.6 defines one that turns
  // every array into a string): each array is given to the serializer as a plain copy.
  const toJson = (value) => JSON.stringify(value, function (k, v) {
    const raw = this[k];
    return Array.isArray(raw) ? Array.from(raw) : v;
  });
  // Unacked messages [{client_id, body, as}], shared by this browser's tabs. Always read fresh, so that two
  // tabs adding and removing entries do not overwrite each other's. Each belongs to whom it was written as
  // (`as`: the page's user id, none for the anonymous visitor) and is shown and sent only as them: after a
  // logout (Porch.identify(null)) the next person at the browser must not send, or see, the user's words,
  // and a copy the server stored for the user would be stored again for someone else. It waits for its
  // writer's return instead.
  const writer = () => (c.user?.id != null ? String(c.user.id).trim() : null);
  const stored = () => {
    try { const list = JSON.parse(read(key("pending"))); return Array.isArray(list) ? list : []; } catch { return []; }
  };
  const isMine = (m) => (m?.as ?? null) === writer();
  const pending = () => stored().filter(isMine);
  const setPending = (list) => {
    const all = [...stored().filter((m) => !isMine(m)), ...list.map((m) => ({ ...m, as: writer() }))];
    write(key("pending"), all.length ? toJson(all) : null);
  };
  // What the box holds, unsent ({as, body}): back in the box only for whom it was written as, like the above.
  const saveDraft = () => write(key("draft"), input.value ? toJson({ as: writer(), body: input.value }) : null);
  const draft = () => {
    try { const d = JSON.parse(read(key("draft"))); return (isMine(d) && d.body) || ""; } catch { return ""; }
  };
  const addPending = (m) => setPending([...pending().filter((p) => p.client_id !== m.client_id), m]);
  const dropPending = (cid) => setPending(pending().filter((p) => p.client_id !== cid));

  const newClientId = () => {
    if (crypto.randomUUID) return crypto.randomUUID();
    const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    return Array.from(crypto.getRandomValues(new Uint8Array(22)), (b) => abc[b & 63]).join("");
  };
