// Porch chat panel. Loaded by the launcher (launcher.js) on the visitor's click; it takes the config and the
// launcher's shadow root from window.__porch, draws the panel inside that shadow root and speaks the widget
// protocol (docs/widget-protocol.md). All server and visitor text goes into the page with textContent
// (or text nodes) only. Nothing here may throw into the host page. The file is pure ASCII (non-ASCII text
// as \u escapes), so it reads right whatever charset the host page or a proxy imposes. Every visitor-facing
// string goes through t(key, vars); other languages are fetched once, before the panel is drawn.
(async () => {
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
    "bytes": "{n} bytes",
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
  let lang = "en"; // the language the panel's texts are in, for its lang and dir
  if (wanted !== "en") {
    // Blocked (CSP connect-src), missing, slow or broken: English, silently.
    try {
      S = await Promise.race([fetch(`${c.url}/widget/locales/${wanted}.json`).then((r) => (r.ok ? r.json() : {})),
        new Promise((ok) => { setTimeout(ok, 4000, {}); })]) || {};
      if (typeof S.send === "string") lang = wanted;
    } catch { /* English */ }
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
  const addPending = (m) => setPending([...pending().filter((p) => p.client_id !== m.client_id), m]);
  const dropPending = (cid) => setPending(pending().filter((p) => p.client_id !== cid));

  const newClientId = () => {
    if (crypto.randomUUID) return crypto.randomUUID();
    const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    return Array.from(crypto.getRandomValues(new Uint8Array(22)), (b) => abc[b & 63]).join("");
  };

  // --- DOM

  const h = (tag, props = {}, ...kids) => {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(props)) {
      if (k === "text") el.textContent = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (v === true) el.setAttribute(k, "");
      else if (v != null && v !== false) el.setAttribute(k, v);
    }
    el.append(...kids);
    return el;
  };
  // Sets an attribute, or removes it when `value` is null or false.
  const attr = (el, name, value) => {
    if (value == null || value === false) el.removeAttribute(name); else el.setAttribute(name, value);
  };
  const svg = (path) => {
    const el = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    el.setAttribute("viewBox", "0 0 24 24");
    el.setAttribute("aria-hidden", "true");
    const p = document.createElementNS("http://www.w3.org/2000/svg", "path");
    p.setAttribute("d", path);
    el.append(p);
    return el;
  };

  const launcher = root.querySelector("[data-porch=launcher]");
  const css = h("link", { rel: "stylesheet", href: `${c.url}/widget/panel.css` });
  const title = h("h2", { id: "porch-title", text: c.label || t("launcher") });
  // A role="status" region: screen readers hear each change of state (setStatus keeps the countdown out of it).
  const status = h("p", { class: "status", "data-porch": "status", "data-state": "connecting", role: "status" });
  const closeBtn = h("button", { type: "button", class: "close", "aria-label": t("close"),
    onclick: () => setOpen(false, true) }, svg("M6 6l12 12M18 6L6 18"));
  const greeting = h("div", { class: "msg agent greeting", "data-porch": "greeting", hidden: true },
    h("div", { class: "bubble", dir: "auto" }));
  // Only messages added are news: a message's meta line changes in place later ("Sent", "Seen"), and that
  // is not to be read out as new content (see setMeta for why that alone is not relied on).
  const list = h("div", { class: "messages", "data-porch": "messages", role: "log", "aria-live": "polite",
    "aria-relevant": "additions", "aria-label": t("messages"), tabindex: "0" }, greeting);
  // The list keeps to its end while the visitor has not scrolled up, also when what is around it
  // grows and makes it shorter (the email form after the first ack, the composer, file chips):
  // otherwise the first reply could arrive below the fold, unseen.
  let pinned = true;
  list.addEventListener("scroll", () => {
    pinned = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  }, { passive: true });
  const keepEnd = () => { if (pinned) list.scrollTop = list.scrollHeight; };
  if (window.ResizeObserver) new ResizeObserver(keepEnd).observe(list);
  // An image loading after its message was placed makes the content taller, not the list. One in the
  // newest message counts as at the end if it is but for the image's own height (a scroll event on the
  // way may have said otherwise); an older one loading never pulls a reader down.
  list.addEventListener("load", (e) => {
    pinned ||= e.target.closest("[data-porch=message]") === list.lastElementChild
      && list.scrollHeight - list.scrollTop - list.clientHeight - e.target.offsetHeight < 40;
    keepEnd();
  }, true);
  const typing = h("p", { class: "typing", "data-porch": "typing", hidden: true });
  const error = h("p", { id: "porch-error", class: "error", "data-porch": "error", role: "alert", hidden: true });
  // No maxlength: it counts UTF-16 units, so 2,000 emoji would fill it; the limit is 4,000 characters
  // (code points), as the server counts, checked on send with the counter beside the box.
  // dir=auto: Arabic typed into an English panel is laid out right to left as it is typed, as it will be sent.
  const input = h("textarea", { id: "porch-input", "data-porch": "input", rows: "1", dir: "auto",
    placeholder: t("placeholder"), autocomplete: "off" });
  // Not a live region: read with the box (its aria-describedby while shown); thresholds are announced (grow).
  const counter = h("span", { id: "porch-counter", class: "counter", hidden: true });
  const sendBtn = h("button", { type: "submit", class: "send", "data-porch": "send" }, t("send"));
  const form = h("form", { class: "composer", onsubmit: (e) => { e.preventDefault(); submit(); } },
    h("label", { for: "porch-input", class: "sr", text: t("your_message") }), input, counter, sendBtn);
  // Offline capture (docs/widget-protocol.md, "email"): offered once the visitor's first message is stored,
  // so a reply can reach them by email if they have left by then.
  const emailInput = h("input", { id: "porch-email", type: "email", "data-porch": "email-input", maxlength: "254",
    autocomplete: "email", placeholder: "you@example.com" });
  const emailForm = h("form", { class: "email-capture", "data-porch": "email", hidden: true, novalidate: true,
    onsubmit: (e) => { e.preventDefault(); saveEmail(); } },
    h("label", { for: "porch-email", text: t("email_offer") }),
    h("div", { class: "row" }, emailInput, h("button", { type: "submit", class: "save", text: t("save") })));
  // Your data (docs/widget-protocol.md, "Your data"): a small menu to download it or erase it.
  const dataMenu = h("div", { class: "data-menu", "data-porch": "data-menu", hidden: true });
  const dataBtn = h("button", { type: "button", class: "more", "aria-label": t("your_data"), "aria-expanded": "false",
    "data-porch": "data-button", onclick: () => showDataMenu(dataMenu.hidden) }, svg("M5 12h.01M12 12h.01M19 12h.01"));
  const panel = h("section", {
    // "bare": the site started the widget without our button ("launcher": false), so nothing sits below.
    class: `panel${c.position === "left" ? " left" : ""}${c.launcher === false ? " bare" : ""}`, "data-porch": "panel", role: "dialog",
    "aria-labelledby": "porch-title", hidden: true, lang, dir: lang === "ar" || lang === "he" ? "rtl" : "ltr",
  }, h("div", { class: "head" }, h("div", { class: "who" }, title, status), dataBtn, closeBtn), dataMenu, list, typing, error,
  emailForm, form);
  // One polite region outside the panel, so that it also speaks while the panel is closed: what a visitor
  // would otherwise only see (a reply behind the launcher's dot, the message box nearing its limit).
  const announcer = h("p", { class: "sr", "data-porch": "announce", role: "status" });
  // A reply's first lines above the closed launcher, as a click target that opens the chat. Screen
  // readers and the keyboard have the announcer and the launcher's name for it, so it is hidden from them.
  const peek = h("button", { type: "button", class: `peek${c.position === "left" ? " left" : ""}`, "data-porch": "peek",
    "aria-hidden": "true", tabindex: "-1", hidden: true, onclick: () => launcher?.click() });
  root.append(css, panel, announcer, peek);
  let announceTimer = null;
  const announce = (text) => {
    clearTimeout(announceTimer);
    announcer.textContent = "";
    // Emptied first and filled a moment later, so that the same words twice are spoken twice.
    if (text) announceTimer = setTimeout(() => { announcer.textContent = text; }, 100);
  };

  // --- attachments (docs/widget.md, "Attachments"): each file is uploaded over HTTP with the visitor token
  // as soon as it is picked, pasted or dropped; the `message` frame then names the uploads' ids. Files are
  // served only with the token in a header, so they are fetched and shown from blob URLs.

  // Known visitors (docs/widget.md): the host page's logged-in user, verified by the server with user_hash.
  const identity = () => {
    const u = c.user;
    return u && typeof u === "object" ? { id: u.id, name: u.name, email: u.email, user_hash: u.user_hash } : null;
  };

  const MAX_FILES = 10; // the protocol's limit per message
  // Binary units, so the default 10 MiB limit reads "10 MB"; numbers in the chosen language (1,5 MB in German).
  const num = (x, d) => x.toLocaleString(tag, { maximumFractionDigits: d, useGrouping: false });
  // A file's size rounded up and a limit down, so a file just over the limit never reads as the limit
  // ("1.1 MB" too big for "1 MB").
  const sizeText = (n, round = Math.ceil) => (n < 1024 ? t("bytes", { n: num(n, 0) })
    : n < 1048576 ? t("kb", { n: num(round(n / 1024), 0) })
      : t("mb", { n: num(round((n * 10) / 1048576) / 10, 1) }));
  // A known visitor's conversations are the user's, not this browser's: file and data requests prove the
  // user as hello does, with only what proves them (name and email stay out of request logs).
  const proof = (headers) => {
    const who = identity();
    if (who) headers["x-porch-identity"] = encodeURIComponent(JSON.stringify({ id: who.id, user_hash: who.user_hash }));
    return headers;
  };
  const getFile = async (url) => {
    const headers = proof({ authorization: `Bearer ${read(key("token"))}` });
    const r = await fetch(`${c.url}${url}?site=${encodeURIComponent(c.site)}`, { headers });
    if (!r.ok) throw new Error(t("file_gone"));
    return r.blob();
  };
  // A message's files: images by their thumbnail (a click opens the image), others as a link with name and size.
  const fileList = (files) => h("ul", { class: "files", "data-porch": "files" }, ...files.map((f) => {
    const label = `${f.name} (${sizeText(f.size)})`;
    const isImage = /^image\//.test(f.type);
    const open = (e) => {
      e.preventDefault();
      getFile(f.url).then((b) => saveBlob(b, isImage ? null : f.name), (err) => showError(err.message));
    };
    if (!isImage) return h("li", {}, h("a", { href: "#", class: "file", "data-porch": "file", onclick: open, text: label }));
    const img = h("img", { alt: label });
    getFile(`${f.url}/thumbnail`).then((b) => { img.src = URL.createObjectURL(b); }, () => { img.alt = `${label}: ${t("file_gone")}`; });
    return h("li", {}, h("a", { href: "#", class: "image", "data-porch": "file-image", title: label, onclick: open }, img));
  }));

  let uploads = []; // {file, el, note, state: waiting | uploading | done | failed, meta, xhr}
  const chips = h("ul", { class: "chips", "data-porch": "chips", "aria-label": t("files"), "aria-live": "polite",
    hidden: true });
  const picker = h("input", { type: "file", multiple: true, hidden: true, tabindex: "-1", "data-porch": "file-input",
    accept: "image/png,image/jpeg,image/gif,image/webp,application/pdf,text/plain",
    onchange: () => { addFiles(picker.files); picker.value = ""; } });
  const attachBtn = h("button", { type: "button", class: "attach", "aria-label": t("attach"), title: t("attach"),
    "data-porch": "attach", onclick: () => picker.click() },
  svg("M20 11.5l-8.2 8.2a5 5 0 01-7-7L13 4.5a3.3 3.3 0 014.7 4.7l-8.2 8.2a1.7 1.7 0 01-2.4-2.4L14.5 7.6"));
  form.prepend(attachBtn, picker);
  form.before(chips);
  panel.dataset.drop = t("drop");

  const setChip = (u, state, text) => {
    u.state = u.el.dataset.state = state;
    u.note.textContent = text;
  };
  const showChips = () => { chips.hidden = !uploads.length; };
  const addFiles = (files) => {
    for (const file of files) {
      if (uploads.length >= MAX_FILES) { showError(t("too_many_files", { max: MAX_FILES })); break; }
      const u = { file, state: "waiting", note: h("span", { class: "note" }) };
      u.el = h("li", { class: "chip", "data-porch": "chip" }, h("span", { class: "fname", text: file.name }),
        h("span", { class: "size", text: sizeText(file.size) }), u.note,
        h("button", { type: "button", class: "remove", "aria-label": t("remove_file", { name: file.name }),
          onclick: () => { u.xhr?.abort(); dropUploads([u]); input.focus(); } }, svg("M6 6l12 12M18 6L6 18")));
      uploads.push(u);
      chips.append(u.el);
    }
    showChips();
    startUploads();
  };
  const dropUploads = (gone) => {
    uploads = uploads.filter((u) => !gone.includes(u));
    for (const u of gone) u.el.remove();
    showChips();
  };
  const startUploads = () => {
    const token = read(key("token"));
    for (const u of uploads) {
      if (u.state !== "waiting") continue;
      if (!token) setChip(u, "waiting", t("upload_waiting"));
      else upload(u, token);
    }
  };
  // XMLHttpRequest rather than fetch: it reports the upload's progress.
  const upload = (u, token) => {
    const xhr = new XMLHttpRequest();
    u.xhr = xhr;
    const progress = (done) => setChip(u, "uploading", t("uploading", { pct: done }));
    progress(0);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) progress(Math.floor((e.loaded * 100) / e.total)); };
    xhr.onload = () => {
      let r = null;
      try { r = JSON.parse(xhr.responseText); } catch { /* not our JSON: a proxy's page */ }
      if (xhr.status === 201 && r?.id) { u.meta = r; setChip(u, "done", t("ready")); return; }
      const e = r?.error || {};
      const k = `f_${e.code}`;
      setChip(u, "failed", t(k in EN ? k : "f_failed", { max: sizeText(e.max_bytes, Math.floor) }));
    };
    xhr.onerror = () => setChip(u, "failed", t("f_failed"));
    xhr.open("POST", `${c.url}/widget/attachments?site=${encodeURIComponent(c.site)}&name=${encodeURIComponent(u.file.name)}`);
    xhr.setRequestHeader("authorization", `Bearer ${token}`);
    xhr.send(u.file);
  };
  // The uploaded files for the message being sent, or null (and a word why) while some are still uploading.
  const readyFiles = () => {
    if (uploads.some((u) => u.state === "waiting" || u.state === "uploading")) { showError(t("files_busy")); return null; }
    return uploads.filter((u) => u.state === "done").map((u) => u.meta);
  };
  // Sent files leave the tray; failed ones stay, with their reason, until the visitor removes them.
  const dropSentFiles = () => dropUploads(uploads.filter((u) => u.state === "done"));

  input.addEventListener("paste", (e) => {
    const files = e.clipboardData?.files;
    if (files?.length) { e.preventDefault(); addFiles(files); }
  });
  panel.addEventListener("dragover", (e) => {
    if (!e.dataTransfer?.types.includes("Files")) return;
    e.preventDefault();
    panel.classList.add("drop");
  });
  panel.addEventListener("dragleave", (e) => { if (!panel.contains(e.relatedTarget)) panel.classList.remove("drop"); });
  panel.addEventListener("drop", (e) => {
    panel.classList.remove("drop");
    if (!e.dataTransfer?.files.length) return;
    e.preventDefault();
    addFiles(e.dataTransfer.files);
  });

  // --- open and close

  let isOpen = false;
  let cssReady = false;
  let cssFailed = false;
  const note = root.querySelector("[data-porch=unavailable]");
  const setOpen = (open, byVisitor) => {
    if (open && cssFailed) { note.hidden = false; return; }
    isOpen = open;
    panel.hidden = !(open && cssReady); // no flash of an unstyled panel
    P.state(open);
    if (open) {
      setUnread(false);
      if (!ws && !stopped) connect();
      list.scrollTop = list.scrollHeight;
      if (byVisitor && cssReady) startField().focus();
    } else {
      // Reopened, the panel shows the chat, not a menu left open.
      showDataMenu(false);
      if (byVisitor) launcher?.focus();
    }
  };
  // Where an opening puts focus. After a stop the box is disabled and cannot take it: Close chat does.
  // A form above an empty box comes first, so it is heard before the box (the form may have arrived
  // before the stylesheet, while the panel was still hidden and could not take focus).
  const startField = () => {
    if (stopped) return closeBtn;
    return preFields?.length && !input.value ? preFields[0].input : input;
  };
  let focusWhenReady = false;
  css.onload = () => {
    cssReady = true;
    if (isOpen) setOpen(true, focusWhenReady);
  };
  // Refused (a Content-Security-Policy without Porch in style-src) or unreachable: unstyled, the panel would
  // sit unseen below the page and still take focus. The launcher's note says the chat is unavailable, as when
  // panel.js cannot load; the browser's console says why.
  css.onerror = () => {
    cssFailed = true;
    drop();
    if (isOpen) setOpen(false);
    note.hidden = false;
  };
  P.toggle = () => { focusWhenReady = true; setOpen(!isOpen, true); };
  // Escape on our button closes the panel it opened, as Escape inside the panel does.
  launcher?.addEventListener("keydown", (e) => { if (e.key === "Escape" && isOpen) setOpen(false, true); });
  panel.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      e.stopPropagation();
      // One layer at a time: an open "Your data" menu closes first, the panel on the next Escape.
      if (dataMenu.hidden) setOpen(false, true);
      else { showDataMenu(false); dataBtn.focus(); }
    } else if (e.key === "Tab" && fullScreen?.matches) {
      keepFocusIn(e);
    }
  });

  // Below 481 px wide or tall the panel covers the whole page (panel.css), so there it is a modal dialog:
  // Tab and Shift+Tab cycle inside it, as nothing else on the screen can be seen. Larger, it sits beside
  // the page and stays non-modal: Tab leaves it for the page like any other part of it.
  const fullScreen = window.matchMedia?.("(max-width: 480px), (max-height: 480px)");
  const setModal = () => attr(panel, "aria-modal", !!fullScreen?.matches && "true");
  setModal();
  // Again when that changes: a phone turned sideways, a window resized.
  fullScreen?.addEventListener?.("change", setModal);
  const tabbable = () => [...panel.querySelectorAll("a[href], button, input, textarea, [tabindex]")]
    .filter((el) => el.tabIndex >= 0 && !el.disabled && el.getClientRects().length);
  const keepFocusIn = (e) => {
    const all = tabbable();
    const at = root.activeElement;
    const edge = e.shiftKey ? all[0] : all[all.length - 1];
    if (all.length && at === edge) {
      e.preventDefault();
      (e.shiftKey ? all[all.length - 1] : all[0]).focus();
    }
  };

  // A reply while the panel is closed: the launcher's dot, its name (what a screen reader says on it) and,
  // once, a word in the announcer; all reset when the panel opens. Replies in the history a page loads
  // with mark the launcher too, but are not announced: they are not news to this page.
  const launcherLabel = launcher?.getAttribute("aria-label") || t("launcher");
  const setUnread = (unread) => {
    if (!launcher) return;
    attr(launcher, "data-unread", unread && "");
    launcher.setAttribute("aria-label", unread ? t("unread", { label: launcherLabel }) : launcherLabel);
    if (!unread) { announce(""); peek.hidden = true; }
  };

  // --- status line and errors

  // `steady`, when given, is what screen readers get instead of `text`: the reconnect countdown changes
  // every second, and a role="status" region would read out each tick. Its visible words are then hidden
  // from them and one steady "Reconnecting..." stands in, changed in place only when it changes, so
  // the whole wait (ticks and attempts alike) is announced once.
  const setStatus = (text, state, steady) => {
    status.dataset.state = state;
    if (!steady) { status.textContent = text; return; }
    if (status.children.length !== 2) {
      status.replaceChildren(h("span", { "aria-hidden": "true" }), h("span", { class: "sr" }));
    }
    const [shown, spoken] = status.children;
    shown.textContent = text;
    if (spoken.textContent !== steady) spoken.textContent = steady;
  };
  let errorTimer = null;
  // Shows a message near the composer; with waitMs, counts down "Please wait N s" and then clears itself.
  // The line is an alert, and rewriting one cuts speech off: the ticking words are hidden from screen
  // readers, who hear the message once.
  const showError = (text, waitMs) => {
    clearInterval(errorTimer);
    errorTimer = null;
    error.hidden = !text && !waitMs;
    if (!waitMs) { error.textContent = text || ""; return; }
    error.replaceChildren(text ? `${text} ` : "", h("span", { "aria-hidden": "true" }));
    const until = Date.now() + waitMs;
    const tick = () => {
      const s = Math.ceil((until - Date.now()) / 1000);
      if (s <= 0) { clearInterval(errorTimer); errorTimer = null; error.hidden = true; return; }
      error.lastChild.textContent = t("wait", { s });
    };
    tick();
    errorTimer = setInterval(tick, 1000);
  };

  // --- messages

  const byId = new Map(); // server message id -> bubble, so a message is never shown twice
  const byClientId = new Map(); // the visitor's own messages by client_id, before and after their ack
  let lastId = 0; // highest id received in welcome or pushed messages (see docs/widget.md)

  const URL_RE = /\bhttps?:\/\/[^\s<>"]+[^\s<>"'.,;:!?)\]]/g;
  const fillText = (el, text) => {
    let at = 0;
    for (const m of text.matchAll(URL_RE)) {
      let url = m[0];
      // A closing bracket is the URL's when the URL opened it ("/wiki/Foo_(bar)"), else the text's.
      if (text[m.index + url.length] === ")" && url.split("(").length > url.split(")").length) url += ")";
      el.append(text.slice(at, m.index),
        h("a", { href: url, target: "_blank", rel: "noopener noreferrer nofollow", text: url }));
      at = m.index + url.length;
    }
    el.append(text.slice(at));
  };
  const timeOf = (at) => new Date(at).toLocaleTimeString(tag, { timeStyle: "short" });
  // Changes a text in place (the element's one text node), so no node is added: see setMeta.
  const setText = (el, text) => {
    if (el.textContent === text) return;
    if (el.firstChild) el.firstChild.data = text; else el.append(text);
  };
  // The short local time on a message, with the full date for hover and screen readers.
  const setStamp = (time, at) => {
    if (!Number.isFinite(at)) return;
    const d = new Date(at);
    time.dateTime = d.toISOString();
    time.title = d.toLocaleString(tag, { dateStyle: "full", timeStyle: "short" });
    setText(time, timeOf(at));
  };

  // `at`: the server's time of a stored message; the visitor's own clock for one not stored yet, which the
  // server's replaces on the ack (the same minute, as a rule, so nothing visibly changes).
  const bubble = (author, body, agentName, files, at) => {
    // dir="auto": each message takes the direction of its own first strong letter, so Arabic in an English
    // panel (or English in an Arabic one) reads and aligns right, whatever the panel's dir.
    // Hidden when empty: a message may be only files.
    const text = h("div", { class: "bubble", dir: "auto", hidden: !String(body) });
    fillText(text, String(body));
    const el = h("div", { class: `msg ${author}`, "data-porch": "message", "data-author": author });
    if (author === "agent") el.append(h("p", { class: "name", text: agentName || t("agent") }));
    el.append(text);
    if (Array.isArray(files) && files.length) el.append(fileList(files));
    const time = h("time", {});
    setStamp(time, at);
    el.append(h("p", { class: "meta" }, time, h("span", { class: "state", "aria-hidden": "true" })));
    return el;
  };
  // "14:05 \u00b7 Sent" under a visitor's message ("Sending\u2026", "Seen", "Not sent"), the time under an
  // agent's. The list is a live region: what changes in a message already in it must not be read out as
  // new. aria-relevant="additions" says so, but not every screen reader honours it (NVDA reads text
  // changes regardless), so the meta line is built once with the bubble and only changed in place, and
  // the state word, the one part that changes, is aria-hidden: screen readers hear a message once, with
  // its time. A message that is not sent says so through the error line (role="alert").
  const setMeta = (el, state, text) => {
    el.dataset.status = state;
    const [time, word] = el.querySelector(".meta").children;
    if (el.dataset.at) setStamp(time, Number(el.dataset.at));
    setText(word, text ? ` \u00b7 ${text}` : "");
  };
  // Keeps the list in id order, with unacked messages (no id yet) last and the greeting first; a message
  // that was not sent keeps its place after the messages it followed (data-after), so it does not sink
  // below later ones. A message already in the list moves only when its place changes: a move is a
  // removal and an addition, which the live region would read out again.
  const order = (el) => Number(el.dataset.id) || Number(el.dataset.after) + 0.5 || Infinity;
  const place = (el) => {
    const id = order(el);
    let prev = list.lastElementChild;
    while (prev !== greeting && (prev === el || order(prev) > id)) {
      prev = prev.previousElementSibling;
    }
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    if (prev.nextElementSibling !== el) prev.after(el);
    if (atBottom || el.dataset.author === "visitor") list.scrollTop = list.scrollHeight;
  };

  const showOwn = (m) => {
    const el = bubble("visitor", m.body, null, m.attachments, Date.now());
    setMeta(el, "sending", t("sending"));
    byClientId.set(m.client_id, el);
    place(el);
  };
  const confirm = (el, cid, id, at) => {
    dropPending(cid);
    el.dataset.id = id;
    el.dataset.at = at;
    setMeta(el, "sent", t("sent"));
    byId.set(id, el);
    place(el);
    markSeen();
    tell("visitor", el.querySelector(".bubble").textContent, { id, at });
  };
  const showServerMessage = (m) => {
    if (typeof m.id !== "number") return;
    lastId = Math.max(lastId, m.id);
    if (m.author === "visitor" && m.client_id != null) dropPending(m.client_id);
    if (byId.has(m.id)) return;
    const own = m.author === "visitor" && m.client_id != null ? byClientId.get(m.client_id) : null;
    if (own) { confirm(own, m.client_id, m.id, m.at); return; }
    const author = m.author === "agent" ? "agent" : "visitor";
    const el = bubble(author, m.body ?? "", m.agent_name, m.attachments, m.at);
    el.dataset.id = m.id;
    el.dataset.at = m.at;
    setMeta(el, "sent", author === "agent" ? "" : t("sent"));
    byId.set(m.id, el);
    if (m.client_id != null) byClientId.set(m.client_id, el);
    place(el);
    markSeen();
    tell(author, String(m.body ?? ""), m);
    if (author === "agent") {
      setTyping(false);
      if (!isOpen) {
        setUnread(true);
        if (live && !launcher?.hidden) {
          const said = t("new_reply", { name: m.agent_name || t("agent") });
          announce(said);
          peek.textContent = m.body ? `${m.agent_name || t("agent")}: ${m.body}` : said;
          peek.hidden = false;
        }
      }
      // An agent answered while the visitor is here: no need to offer replies by email any more.
      if (live) {
        agentReplied = true;
        if (read(key("email")) == null) emailForm.hidden = true;
      }
    }
  };

  // --- what agents did: "Seen" (docs/widget-protocol.md, `read`) and the closed notice (`closed`)

  let live = false; // past the first welcome: messages shown from now on are news (Porch.on("message"))
  let agentReplied = false;
  // Tells the host page's Porch.on("message") handlers (launchers before the JS API have no emit).
  const tell = (author, body, m) => {
    if (live) P.emit?.("message", { id: m.id, author, name: author === "agent" ? m.agent_name || null : null,
      body, at: m.at });
  };
  let seenUpTo = 0;
  let seenEl = null;
  // "Seen" goes under the visitor's newest stored message once an agent has seen it, and only there.
  const markSeen = () => {
    if (!seenUpTo) return; // nothing seen yet: skip the lookup while the history loads
    const own = list.querySelectorAll("[data-author=visitor][data-id]");
    const last = own[own.length - 1];
    const next = last && Number(last.dataset.id) <= seenUpTo ? last : null;
    if (seenEl && seenEl !== next && seenEl.dataset.status === "seen") setMeta(seenEl, "sent", t("sent"));
    if (next) setMeta(next, "seen", t("seen"));
    seenEl = next;
  };
  // A notice per status line, by its id: `closed` comes again after every welcome while the
  // conversation stays closed, with the id of the line that closed it (shown once), and a close
  // and a reopen made at the same moment can arrive out of id order (each is placed by its id,
  // and neither hides the other).
  const statusShown = new Set();
  const showStatus = (f, status) => {
    if (typeof f.id !== "number" || statusShown.has(f.id)) return;
    statusShown.add(f.id);
    if (status === "closed") setTyping(false);
    const el = h("p", { class: "notice", "data-porch": status, role: "status", text: t(status) });
    el.dataset.id = f.id;
    place(el);
  };

  let typingTimer = null;
  const setTyping = (active, name) => {
    clearTimeout(typingTimer);
    typing.hidden = !active;
    if (!active) return;
    typing.replaceChildren(t("typing", { name: name || t("agent") }), h("span", { class: "dots", "aria-hidden": "true" },
      h("i"), h("i"), h("i")));
    typingTimer = setTimeout(() => { typing.hidden = true; }, TYPING_MS);
  };

  // --- the connection

  let ws = null;
  let isReady = false; // welcome received on the current socket
  let stopped = false; // after a 1008 close: show the error, never reconnect
  let attempt = 0;
  let reconnectTimer = null;
  let countdown = null;
  // While the server has asked us to wait (retry_after_ms), nothing is sent; then everything unacked goes
  // again in order, so a refused message is not overtaken by the ones typed after it.
  let holdTimer = null;
  let holdUntil = 0;

  const sendFrame = (f) => {
    try { if (ws && isReady) ws.send(toJson(f)); } catch { /* closing: resent after reconnect */ }
  };
  const transmit = (m) => {
    if (!holdTimer && !m.awaiting_form) {
      sendFrame({ type: "message", client_id: m.client_id, body: m.body, attachments: m.attachments?.map((a) => a.id), prechat: m.prechat });
      if (isReady) expectAnswer();
    }
  };
  // Sends every unacked message (this tab's and any left by another page) with its client_id; the
  // server never stores a client_id twice.
  const resendPending = () => {
    for (const m of pending()) {
      if (!byClientId.has(m.client_id)) showOwn(m);
      transmit(m);
    }
  };
  const hold = (ms) => {
    holdUntil = Math.max(holdUntil, Date.now() + ms);
    clearTimeout(holdTimer);
    holdTimer = setTimeout(() => { holdTimer = null; resendPending(); }, holdUntil - Date.now());
  };

  // A network that goes away without a word (a train's tunnel, a sleeping laptop, a dropped proxy) leaves
  // the browser's socket open for minutes, saying nothing. So when an answer is due (the welcome after
  // the hello, an ack after a message, a pong after a ping) and nothing at all arrives within
  // ANSWER_WAIT_MS (OPEN_WAIT_MS for the socket to open), the socket is given up and a new one made;
  // resending is safe, as the server never stores a client_id twice. A visitor waiting for a reply sends
  // nothing, so a live socket that has been quiet for QUIET_MS is pinged, and at once when the page is
  // shown again (a laptop waking up): a dead one is then noticed, and the replies it missed come with the
  // next welcome.
  let answerTimer = null;
  let quietTimer = null;
  const heard = () => { clearTimeout(answerTimer); answerTimer = null; };
  const expectAnswer = (ms = ANSWER_WAIT_MS) => {
    if (answerTimer || !ws) return;
    const sock = ws;
    answerTimer = setTimeout(() => {
      answerTimer = null;
      if (ws === sock) { drop(); scheduleReconnect(); }
    }, ms);
  };
  const ping = () => { if (isReady) { sendFrame({ type: "ping" }); expectAnswer(); } };
  const listen = () => {
    clearTimeout(quietTimer);
    quietTimer = isReady ? setTimeout(ping, QUIET_MS) : null;
  };
  document.addEventListener("visibilitychange", () => { if (!document.hidden) ping(); });
  // Forgets the current socket without waiting for its close handshake, which a dead network never ends.
  const drop = () => {
    const sock = ws;
    ws = null;
    isReady = false;
    heard();
    listen();
    setTyping(false);
    try { sock?.close(); } catch { /* already closed */ }
  };

  const connect = () => {
    clearTimeout(reconnectTimer);
    clearInterval(countdown);
    if (ws || stopped) return;
    setStatus(t("connecting"), "connecting", attempt ? t("reconnect") : null);
    let sock;
    try { sock = new WebSocket(wsUrl); } catch { scheduleReconnect(); return; }
    ws = sock;
    expectAnswer(OPEN_WAIT_MS);
    sock.onopen = () => {
      // The welcome is due within ANSWER_WAIT_MS of the hello, however long the opening took.
      if (ws === sock) { heard(); expectAnswer(); }
      const hello = { type: "hello", v: 1, last_id: lastId, page: location.href.slice(0, 2048),
        referrer: document.referrer.slice(0, 2048) || undefined, language: navigator.language };
      try { hello.time_zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch { /* old browser */ }
      const token = read(key("token"));
      if (token) hello.token = token;
      const who = identity();
      if (who) hello.identity = who;
      sock.send(JSON.stringify(hello));
    };
    sock.onmessage = (e) => {
      if (ws !== sock) return;
      heard();
      let f;
      try { f = JSON.parse(e.data); } catch { return; }
      if (f && typeof f === "object") onFrame(f);
      if (ws === sock) listen();
    };
    sock.onclose = (e) => {
      if (ws !== sock) return;
      drop();
      if (e.code === FATAL_CLOSE) {
        stopped = true;
        setStatus(t("unavailable"), "stopped");
        // Nothing can reach the server any more, so nothing may offer to (the email form's Save went
        // nowhere, saying nothing): the controls are disabled, the forms, the menu and the away notice go,
        // and the status and the error line are what the panel says. Focus in any of them would fall to
        // the host page: Close chat takes it.
        const controls = [input, sendBtn, attachBtn, dataBtn];
        const gone = [emailForm, pre, away];
        if ([...controls, ...gone, dataMenu].some((el) => el.contains(root.activeElement))) closeBtn.focus();
        for (const el of controls) el.disabled = true;
        for (const el of gone) el.hidden = true;
        showDataMenu(false);
        return;
      }
      scheduleReconnect();
    };
  };
  // 1 s, 2 s, 4 s ... 30 s, each shortened by up to a quarter at random so that visitors of a restarted
  // server do not all come back in the same second.
  const scheduleReconnect = () => {
    clearTimeout(reconnectTimer);
    clearInterval(countdown);
    // Offline, a timer would only fail: the "online" event below connects instead.
    if (navigator.onLine === false) { setStatus(t("offline"), "offline"); return; }
    const delay = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** attempt) * (0.75 + Math.random() * 0.25);
    attempt += 1;
    const until = Date.now() + delay;
    const tick = () => setStatus(t("reconnecting", { s: Math.max(1, Math.ceil((until - Date.now()) / 1000)) }),
      "waiting", t("reconnect"));
    tick();
    countdown = setInterval(tick, 1000);
    reconnectTimer = setTimeout(connect, delay);
  };
  // The browser says the network is back: try now rather than at the end of a long backoff.
  window.addEventListener("online", () => { if (!ws && !stopped) connect(); });
  // The browser says the network is gone: the socket is dead even if it has not noticed yet. Messages
  // written meanwhile wait as "Sending" and go when the network is back.
  window.addEventListener("offline", () => {
    if (stopped) return;
    drop();
    scheduleReconnect();
  });

  const onFrame = (f) => {
    switch (f.type) {
      case "welcome": {
        isReady = true;
        attempt = 0;
        if (typeof f.token === "string") write(key("token"), f.token);
        const site = f.site || {};
        // Nobody in the inbox: offer to answer by email (a missing field counts as nobody).
        agentsOnline = site.agents_online === true;
        // No email to send replies with: never ask for an address, nor promise a reply by email.
        mailsReplies = site.mails_replies === true;
        if (site.name) title.textContent = site.name;
        const text = ownText(site.greetings, site.greeting);
        if (text) {
          greeting.firstChild.textContent = text;
          greeting.hidden = false;
        }
        setStatus(t("connected"), "connected");
        showHours(f);
        showPrechat(site.prechat);
        for (const m of Array.isArray(f.messages) ? f.messages : []) showServerMessage(m);
        live = true;
        resendPending();
        startUploads(); // files picked before the first welcome had no token to upload with
        break;
      }
      case "ack": {
        const el = byClientId.get(f.client_id);
        if (el && typeof f.id === "number") confirm(el, f.client_id, f.id, f.at);
        else dropPending(f.client_id);
        if ((afterAck() || !agentsOnline) && mailsReplies && !agentReplied && read(key("email")) == null) emailForm.hidden = false;
        break;
      }
      case "email_saved":
        emailWanted = null;
        if (typeof f.email === "string") write(key("email"), f.email);
        confirmEmail("email-saved", t("email_saved", { email: f.email }));
        break;
      case "message":
        showServerMessage(f);
        // Written in another tab: the chat has begun, so this tab's form is not asked any more.
        if (f.author === "visitor" && asked) showPrechat(null);
        break;
      case "typing":
        setTyping(f.active === true, f.agent_name);
        break;
      case "error":
        onError(f);
        break;
      case "erased":
        startAfresh();
        break;
      case "read":
        if (typeof f.up_to === "number") { seenUpTo = Math.max(seenUpTo, f.up_to); markSeen(); }
        break;
      case "closed":
      case "reopened":
        showStatus(f, f.type);
        break;
      default:
        break; // a newer server's frame: ignore
    }
  };

  const onError = (f) => {
    const text = errorText(f.code, typeof f.message === "string" ? f.message : "");
    const cid = f.client_id;
    // A server older than the typing frame answers it with bad_frame (no client_id): not the visitor's concern.
    if (f.code === "bad_frame" && !cid) return;
    if (f.code === "invalid_prechat" && cid) { awaitForm(cid, text); return; }
    if (f.code === "invalid_message" && !cid && emailWanted) {
      emailWanted = null;
      showError(t("bad_email"));
      markInvalid(emailInput, true);
      return;
    }
    if (WAIT_CODES.has(f.code) && f.retry_after_ms > 0) {
      showError(text, f.retry_after_ms);
      if (cid) hold(f.retry_after_ms);
      return;
    }
    if ((f.code === "invalid_message" || f.code === "unknown_attachment") && cid) notSent(cid);
    // The site was deleted or this page's origin taken off it: what waits can never be sent.
    if (f.code === "site_not_found" || f.code === "origin_not_allowed") for (const m of pending()) notSent(m.client_id);
    showError(text);
  };
  const notSent = (cid) => {
    dropPending(cid);
    const el = byClientId.get(cid);
    if (!el) return;
    setMeta(el, "failed", t("not_sent"));
    el.dataset.after = Math.max(lastId, ...byId.keys());
    place(el);
  };

  // --- your data: downloads and erasure over HTTP, with the token as a text/plain body (no preflight)

  const menuItem = (text, porch, onclick, cls) => h("button", { type: "button", class: cls, "data-porch": porch,
    onclick }, text);
  const showDataMenu = (open) => {
    // Focus on an item that goes away would fall to the host page's body: it goes back to the button.
    if (!open && dataMenu.contains(root.activeElement)) dataBtn.focus();
    dataMenu.hidden = !open;
    dataBtn.setAttribute("aria-expanded", String(open));
    if (open) dataMenu.replaceChildren(
      menuItem(t("download_json"), "download-json", () => download("json")),
      menuItem(t("download_text"), "download-text", () => download("text")),
      menuItem(t("erase"), "erase", askErase, "danger"));
  };
  // The open menu shows below the header but comes after Close chat in the page: Tab from the button goes
  // into the menu, and Shift+Tab from its first item back to the button, so the menu follows its button.
  dataBtn.addEventListener("keydown", (e) => {
    const first = dataMenu.querySelector("button");
    if (e.key === "Tab" && !e.shiftKey && !dataMenu.hidden && first) { e.preventDefault(); first.focus(); }
  });
  dataMenu.addEventListener("keydown", (e) => {
    if (e.key === "Tab" && e.shiftKey && e.target === dataMenu.querySelector("button")) {
      e.preventDefault();
      dataBtn.focus();
    }
  });
  // The question replaces the menu, and with it the button that had focus. Focus goes to Cancel, the safe
  // answer, inside an alertdialog described by the question, so screen readers read the question out.
  const askErase = () => {
    const cancel = menuItem(t("cancel"), "erase-cancel", () => showDataMenu(false));
    dataMenu.replaceChildren(h("div", { class: "ask", "data-porch": "erase-ask", role: "alertdialog",
      "aria-label": t("erase"), "aria-describedby": "porch-erase-ask" },
    h("p", { id: "porch-erase-ask", text: t("erase_ask") }),
    menuItem(t("erase_confirm"), "erase-confirm", eraseOwnData, "danger"), cancel));
    cancel.focus();
  };
  const ownData = async (path) => {
    const token = read(key("token"));
    if (!token) throw new Error(t("nothing_stored"));
    // A network failure says it in the panel's language, not the browser's own words ("Failed to fetch").
    const r = await fetch(`${c.url}/widget/${path}site=${encodeURIComponent(c.site)}`, { method: "POST", body: token,
      headers: proof({}) }).catch(() => { throw new Error(t("error")); });
    if (r.ok) return r;
    const e = (await r.json().catch(() => null))?.error || {};
    throw Object.assign(new Error(errorText(e.code, e.message)), { wait: e.retry_after_ms });
  };
  const download = async (format) => {
    showDataMenu(false);
    try {
      const blob = await (await ownData(`export?format=${format}&`)).blob();
      saveBlob(blob, `conversation.${format === "text" ? "txt" : "json"}`);
    } catch (e) { showError(e.message, e.wait); }
  };
  // Hands a blob to the browser: saved under `name`, or opened in a new tab when `name` is null.
  const saveBlob = (blob, name) => {
    const a = h("a", { href: URL.createObjectURL(blob), download: name, target: name ? null : "_blank",
      rel: "noopener" });
    root.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
  };
  const eraseOwnData = async () => {
    showDataMenu(false);
    // The menu is gone; the fresh chat is what comes next.
    input.focus();
    try { await ownData("erase?"); startAfresh(); } catch (e) { showError(e.message, e.wait); }
  };
  // After an erasure (asked here, or an `erased` frame when an admin erased us): forget everything this
  // browser keeps and connect again as a new visitor.
  const startAfresh = () => {
    for (const k of ["token", "pending", "email"]) write(key(k), null);
    restart();
    showError(t("erased"));
  };
  // Another visitor from now on (after an erasure, or Porch.identify with another user): clear the view and
  // say hello again, so the history shown is the new visitor's, from the start.
  const restart = () => {
    byId.clear();
    byClientId.clear();
    lastId = seenUpTo = 0;
    live = false; // the history the next welcome shows is not news (Porch.on("message"))
    seenEl = null;
    statusShown.clear();
    list.replaceChildren(greeting);
    emailForm.hidden = true;
    for (const u of uploads) u.xhr?.abort(); // the files were the old visitor's
    dropUploads(uploads);
    drop();
    connect();
  };
  P.identify = (u) => {
    c.user = u || undefined;
    restart();
  };

  // --- the offline capture

  let emailWanted = null;
  let agentsOnline = false;
  let mailsReplies = false;
  const saveEmail = () => {
    // Asked again: the server's answer marks it anew.
    markInvalid(emailInput, false);
    const email = emailInput.value.trim();
    if (!email || !isReady || holdEmail(email)) return;
    emailWanted = email;
    showError("");
    sendFrame({ type: "email", email });
  };

  // --- business hours (docs/widget.md, "Business hours"): while welcome.site.open is false, an away notice
  // above the messages, and (out_of_hours "email") the email form at once. The email frame needs a stored
  // message, so an address given before the first one is held and sent after its ack.
  const away = h("div", { class: "away", "data-porch": "away", role: "status", hidden: true });
  list.before(away);
  let isClosed = false;
  let wrote = false; // a message of this visitor is stored, so the server takes an email frame
  let heldEmail = null;
  const emailLabel = emailForm.querySelector("label");
  const openLabel = emailLabel.textContent;
  const showHours = (f) => {
    const site = f.site || {};
    isClosed = site.open === false;
    wrote ||= (Array.isArray(f.messages) ? f.messages : []).some((m) => m.author === "visitor");
    away.hidden = !isClosed;
    emailLabel.textContent = isClosed && site.out_of_hours !== "accept" ? t("away_ask") : openLabel;
    if (!isClosed) return;
    const at = typeof site.opens_at === "number" ? new Date(site.opens_at) : null;
    // The day and time in the chosen language, like a message's time.
    const time = at && timeOf(at);
    const day = at && at.toDateString() !== new Date().toDateString()
      && at.toLocaleDateString(tag, { weekday: "long" });
    const asksEmail = site.out_of_hours !== "accept" && mailsReplies;
    away.replaceChildren(...[ownText(site.away_messages, typeof site.away_message === "string" && site.away_message),
      at && t(day ? "back_on" : "back_at", { day, time }), !asksEmail && mailsReplies && t("away_reply")]
      .filter(Boolean).map((text) => h("p", { text })));
    // A pre-chat form that asks for the address is where it is given: one email field, not two.
    const formAsksEmail = ["optional", "required"].includes(site.prechat?.email);
    if (asksEmail && read(key("email")) == null && !agentReplied && !formAsksEmail) emailForm.hidden = false;
  };
  // After an ack: send a held address; true while closed, so the email form shows even with agents online.
  const afterAck = () => {
    wrote = true;
    if (heldEmail) { emailWanted = heldEmail; sendFrame({ type: "email", email: heldEmail }); heldEmail = null; }
    return isClosed;
  };
  const holdEmail = (email) => {
    if (wrote || !emailInput.checkValidity()) return false;
    heldEmail = email;
    confirmEmail("email-held", t("email_held", { email }));
    return true;
  };
  // The email form gives way to a confirmation. If focus was in the form (the field, or Save) it would
  // fall to the host page's body: it goes to the confirmation (tabindex=-1), which screen readers then
  // read; role="status" tells those whose focus was elsewhere.
  const confirmEmail = (porch, text) => {
    const hadFocus = emailForm.contains(root.activeElement);
    const note = h("p", { "data-porch": porch, role: "status", tabindex: "-1", text });
    emailForm.replaceChildren(note);
    if (hadFocus) note.focus();
  };
  // A field the error line explains is marked for screen readers and points at it, until it is fixed.
  const markInvalid = (field, invalid) => {
    attr(field, "aria-invalid", invalid && "true");
    attr(field, "aria-describedby", invalid && "porch-error");
  };
  emailInput.addEventListener("input", () => { if (emailInput.checkValidity()) markInvalid(emailInput, false); });

  // --- the pre-chat form (docs/widget.md, "Pre-chat form"): while welcome.site.prechat is set (the server sends
  // it until this visitor has answered), its fields sit above the composer; the answers go with the first message (kept with it
  // among the unacked ones, so a resend carries them too).
  const pre = h("div", { class: "prechat", "data-porch": "prechat", hidden: true });
  form.before(pre);
  let preFields = null; // [{key, input, el}] while the form is shown
  let asked = null; // the last welcome's form: what a refused message's answers are asked again with
  // Shows the form `p` (null: none, or this visitor has answered), filled with `answers` if given.
  const showPrechat = (p, answers) => {
    asked = p || null;
    preFields = null;
    pre.hidden = true;
    const queued = pending();
    if (!p) {
      // Nothing to answer any more (answered in another tab, or the form turned off): send what waited.
      if (queued.some((m) => m.awaiting_form)) {
        setPending(queued.map(({ awaiting_form: _, ...m }) => m));
        resendPending();
      }
      return;
    }
    const waiting = queued.find((m) => m.awaiting_form);
    if (queued.length && !waiting) return; // unsent messages go first, with the answers they carry
    const before = answers || (typeof waiting?.awaiting_form === "object" ? waiting.awaiting_form : {});
    const field = (key, label, mode, type, max) => {
      if (mode !== "optional" && mode !== "required") return null;
      const id = `porch-pre-${key}`;
      const input = h("input", { id, type, maxlength: max, "data-porch": `prechat-${key}`,
        required: mode === "required", autocomplete: { name: "name", email: "email" }[key] || "off" });
      if (typeof before[key] === "string") input.value = before[key];
      const text = mode === "required" ? label : t("optional", { label });
      const x = { key, input, el: h("div", { class: "row" }, h("label", { for: id, text }), input) };
      input.addEventListener("input", () => { if (!isBadAnswer(x)) markInvalid(input, false); });
      return x;
    };
    preFields = [field("name", t("your_name"), p.name, "text", "100"),
      field("email", t("your_email"), p.email, "email", "254"),
      p.question && field("answer", String(p.question.label ?? ""), p.question.mode, "text", "1000")]
      .filter(Boolean);
    pre.replaceChildren(...preFields.map((x) => x.el));
    pre.hidden = !preFields.length;
    // The form arrives after the panel opened with focus in the message box, below it: a visitor who
    // has not begun writing is taken to the form, so it is heard before the box and not only on a refusal.
    if (root.activeElement === input) startField().focus();
  };
  const isBadAnswer = (x) => (x.input.required && !x.input.value.trim()) || !x.input.checkValidity();
  // False while a required field is empty or invalid. Every field at fault is marked and pointed at the
  // error line, which says what is wrong with each kind; the others lose a mark an earlier try left.
  // Focus goes to the first.
  const prechatOk = () => {
    const bad = preFields.filter(isBadAnswer);
    for (const x of preFields) markInvalid(x.input, bad.includes(x));
    showError([...new Set(bad.map((x) => (x.key === "email" && x.input.value.trim() ? t("bad_email") : t("prechat_missing"))))].join(" "));
    bad[0]?.input.focus();
    return !bad.length;
  };
  // Puts the answers on the first message; false (saying why) while the form is not answered well.
  const withPrechat = (m) => {
    if (!preFields) return true;
    if (!prechatOk()) return false;
    m.prechat = Object.fromEntries(preFields.map((x) => [x.key, x.input.value.trim()]));
    // An address given here is the one replies go to: the offline email form need not ask again.
    if (m.prechat.email) {
      write(key("email"), m.prechat.email);
      emailForm.hidden = true;
    }
    preFields = null;
    pre.hidden = true;
    return true;
  };
  // The server refused a message for its answers (a mistyped address, or none: it was written before the
  // form was known, while the server was down): it stays unsent, and the form asks again, filled with what
  // was given, until the visitor answers it (the send button then sends the waiting messages first).
  const awaitForm = (cid, text) => {
    const queued = pending();
    const m = queued.find((p) => p.client_id === cid);
    if (!m) return;
    const answers = m.prechat || {};
    if (answers.email && read(key("email")) === answers.email) write(key("email"), null);
    delete m.prechat;
    m.awaiting_form = answers;
    setPending(queued);
    const el = byClientId.get(cid);
    if (el) setMeta(el, "sending", t("prechat_missing"));
    if (!preFields) showPrechat(asked, answers);
    showError(text);
  };
  // Enter in a field of the form sends, as in the message box and as the send button does. Once answered
  // the form is gone, and with an empty box nothing is sent: either way the message box is where the
  // visitor goes on. A field still at fault (marked by the check) keeps the focus the check gave it.
  pre.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" || e.isComposing) return;
    e.preventDefault();
    submit();
    if (pre.hidden || (!input.value.trim() && !pre.querySelector("[aria-invalid]"))) input.focus();
  });
  // Answers the form for the messages that wait for it; false while it is not answered well.
  const answerWaiting = () => {
    const queued = pending();
    const first = queued.find((m) => m.awaiting_form);
    if (!first) return true;
    if (!withPrechat(first)) return false;
    for (const m of queued) {
      delete m.awaiting_form;
      const el = byClientId.get(m.client_id);
      if (el) setMeta(el, "sending", t("sending"));
    }
    setPending(queued);
    if (isReady) resendPending();
    else if (!ws) connect();
    return true;
  };

  // --- the composer

  const grow = () => {
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight, 140)}px`;
    const n = [...input.value].length;
    counter.hidden = n < MAX_BODY - 500;
    counter.textContent = `${n} / ${MAX_BODY}`;
    attr(input, "aria-describedby", !counter.hidden && "porch-counter");
    announceLeft(MAX_BODY - n);
  };
  // The counter changes with every keystroke, far too often to be spoken: the announcer speaks only when
  // the text crosses into 200 left, 50 left or the limit (again after it went back under a threshold).
  const LEFT_STEPS = [0, 50, 200];
  let leftStep = null;
  const announceLeft = (left) => {
    const step = LEFT_STEPS.find((s) => left <= s) ?? null;
    if (step !== null && (leftStep === null || step < leftStep)) {
      announce(step ? t("chars_left", { n: num(left, 0) }) : t("too_long", { max: MAX_BODY }));
    }
    leftStep = step;
  };
  const submit = () => {
    const body = input.value.trim();
    const files = readyFiles();
    if (!files || stopped || !answerWaiting()) return;
    // Nothing to send, but the form is checked all the same: a required field left empty is said so now,
    // not skipped on the way to the message box.
    if (!body && !files.length) { if (preFields) prechatOk(); return; }
    if ([...body].length > MAX_BODY) { showError(t("too_long", { max: MAX_BODY })); return; }
    // The uploads' ids (and what shows them) go into the pending entry, so a resend names the same files.
    const m = { client_id: newClientId(), body };
    if (!withPrechat(m)) return;
    if (files.length) m.attachments = files;
    // A refusal of what the box held (too long) no longer applies; a rate limit's countdown still does.
    if (!errorTimer) showError("");
    dropSentFiles();
    stopTyping();
    input.value = "";
    grow();
    addPending(m);
    showOwn(m);
    if (isReady) transmit(m);
    else if (!ws) connect(); // the visitor wants to talk now: skip the rest of the backoff wait
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit(); }
  });
  input.addEventListener("input", grow);

  // The visitor's typing, for the agent (a compatible addition to protocol v1): at most one "typing" per
  // 3 s while typing, a stop on send, blur or 5 s without a keystroke.
  let typingSince = 0;
  let typingIdle = null;
  const stopTyping = () => {
    clearTimeout(typingIdle);
    if (typingSince) { typingSince = 0; sendFrame({ type: "typing", active: false }); }
  };
  input.addEventListener("input", () => {
    if (!input.value.trim()) { stopTyping(); return; }
    if (Date.now() - typingSince >= 3000) { typingSince = Date.now(); sendFrame({ type: "typing", active: true }); }
    clearTimeout(typingIdle);
    typingIdle = setTimeout(stopTyping, 5000);
  });
  input.addEventListener("blur", stopTyping);

  // Messages left unacked by an earlier page show at once; they are resent after welcome.
  for (const m of pending()) showOwn(m);
  connect();
  focusWhenReady = P.focus === true; // not when the launcher reopens the chat by itself on a new page
  setOpen(P.open === true, focusWhenReady);
})();
