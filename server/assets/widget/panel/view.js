// Part of the chat panel (served as /widget/panel.js): server/src/widget/panel_source.rs puts the parts in one
// async function, in its order; they share its scope.
// This part: opening and closing, the status line, the messages and what agents did to them.

  // --- open and close

  let isOpen = false;
  let cssReady = false;
  let cssFailed = false;
  const note = root.querySelector("[data-porch=unavailable]");
  const setOpen = (open, byVisitor) => {
    if (open && cssFailed) { note.hidden = false; return; }
    // What an open panel showed was read: the next page's history does not mark it as a new reply.
    if ((open || isOpen) && lastId) write(key("seen"), lastId);
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
  // with mark the launcher too when newer than what the panel last showed open (`seen`), but are not
  // announced: they are not news to this page.
  const launcherLabel = launcher?.getAttribute("aria-label") || t("launcher");
  // A label in another language than the panel's ("Chat with us", lang en, in an Arabic panel) is said
  // whole in the panel's while unread: "(new reply)" in Arabic after English would be read in one voice.
  const launcherLang = launcher?.getAttribute("lang");
  const other = launcherLang && launcherLang !== lang;
  const setUnread = (unread) => {
    if (!launcher) return;
    attr(launcher, "data-unread", unread && "");
    attr(launcher, "lang", unread && other ? lang : launcherLang);
    launcher.setAttribute("aria-label", unread
      ? t("unread", { label: other ? t("launcher") : launcherLabel }) : launcherLabel);
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
  // `done`: not an error but what the visitor asked for, said there ("Your data was deleted."), not in red.
  const showError = (text, waitMs, done) => {
    clearInterval(errorTimer);
    errorTimer = null;
    attr(error, "data-done", done && "");
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

  // A link ends at a direction control, as in the inbox (docs/admin.md, "Links in messages"): an
  // override inside one would show a text that is not its address.
  const URL_RE = /\bhttps?:\/\/[^\s<>"\u202a-\u202e\u2066-\u2069]+[^\s<>"'.,;:!?)\]\u202a-\u202e\u2066-\u2069]/g;
  const fillText = (el, text) => {
    let at = 0;
    for (const m of text.matchAll(URL_RE)) {
      let url = m[0];
      // A closing bracket is the URL's when the URL opened it ("/wiki/Foo_(bar)"), else the text's.
      if (text[m.index + url.length] === ")" && url.split("(").length > url.split(")").length) url += ")";
      // A user name before the host ("https://support.acme.com@evil.example/") reads as another host: text.
      if (/^[^/]+\/\/[^/?#]*@/.test(url)) continue;
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
      // Read where the open panel shows it: the next page (a reload, another tab) must not mark it new.
      // Live only: history replayed in an open panel would move the shared mark back past other tabs'.
      if (isOpen) live && write(key("seen"), m.id);
      else if (live || m.id > read(key("seen"))) {
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
