// Part of the chat panel (served as /widget/panel.js): server/src/widget/panel_source.rs puts the parts in one
// async function, in its order; they share its scope.
// This part: the panel's elements in the launcher's shadow root, and the helpers that make them.

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
  const title = h("h2", { id: "porch-title", dir: "auto", text: c.label || t("launcher") });
  // A role="status" region: screen readers hear each change of state (setStatus keeps the countdown out of it).
  const status = h("p", { class: "status", "data-porch": "status", "data-state": "connecting", role: "status" });
  const closeBtn = h("button", { type: "button", class: "close", "aria-label": t("close"),
    onclick: () => setOpen(false, true) }, svg("M6 6l12 12M18 6L6 18"));
  const greeting = h("div", { class: "msg agent greeting", "data-porch": "greeting", hidden: true },
    h("div", { class: "bubble", dir: "auto" }));
  // Only messages added are news: a message's meta line changes in place later ("Sent", "Seen"), and that
  // is not to be read out as new content (see setMeta for why that alone is not relied on). Live only once
  // a welcome has filled it (connection.js): the greeting and history shown again on every page are not.
  // "off" said outright: a log is polite by default.
  const list = h("div", { class: "messages", "data-porch": "messages", role: "log", "aria-live": "off",
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
  // An address the server takes needs a domain with a dot (a@b is refused): said here, before anything is sent.
  const EMAIL = ".+@[^.@]+([.][^.@]+)+";
  const emailInput = h("input", { id: "porch-email", type: "email", "data-porch": "email-input", maxlength: "254",
    autocomplete: "email", placeholder: "you@example.com", pattern: EMAIL });
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
  // would otherwise only see (a reply behind the launcher's dot, the message box nearing its limit). In the
  // panel's language, not the host page's, so a screen reader speaks it with the right voice.
  const announcer = h("p", { class: "sr", "data-porch": "announce", role: "status", lang, dir: panel.dir });
  // A reply's first lines above the closed launcher, as a click target that opens the chat. Screen
  // readers and the keyboard have the announcer and the launcher's name for it, so it is hidden from them.
  const peek = h("button", { type: "button", class: `peek${c.position === "left" ? " left" : ""}`, "data-porch": "peek",
    "aria-hidden": "true", tabindex: "-1", hidden: true, dir: "auto", onclick: () => launcher?.click() });
  root.append(css, panel, announcer, peek);
  let announceTimer = null;
  const announce = (text) => {
    clearTimeout(announceTimer);
    announcer.textContent = "";
    // Emptied first and filled a moment later, so that the same words twice are spoken twice.
    if (text) announceTimer = setTimeout(() => { announcer.textContent = text; }, 100);
  };
