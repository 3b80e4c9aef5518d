// Part of the chat panel (served as /widget/panel.js): server/src/widget/panel_source.rs puts the parts in one
// async function, in its order; they share its scope.

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
    // A closing socket throws: the message is resent after the reconnect.
    try { if (ws && isReady) ws.send(toJson(f)); } catch {}
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
    // A socket already closed may throw: nothing to do.
    try { sock?.close(); } catch {}
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
      // An old browser may have no time zone to give.
      try { hello.time_zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch {}
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
        attachBtn.hidden = site.files === false; // a site that takes none offers none
        if (site.name) title.textContent = site.name;
        const text = ownText(site.greetings, site.greeting);
        if (text) {
          // In place: after a reconnect the same greeting is not a new one.
          setText(greeting.firstChild, text);
          greeting.hidden = false;
        }
        setStatus(t("connected"), "connected");
        showHours(f);
        showPrechat(site.prechat);
        for (const m of Array.isArray(f.messages) ? f.messages : []) showServerMessage(m);
        live = true;
        // A turn later: the history just added is not judged against a live region.
        setTimeout(() => attr(list, "aria-live", "polite"));
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
      badEmail();
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
