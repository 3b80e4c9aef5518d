// Part of the chat panel (served as /widget/panel.js): server/src/widget/panel_source.rs puts the parts in one
// async function, in its order; they share its scope.

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
        required: mode === "required", autocomplete: { name: "name", email: "email" }[key] || "off",
        pattern: type === "email" && EMAIL });
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
    // A message sent without answers after one that carried them: the first one's reason stands.
    const first = !queued.some((p) => p.awaiting_form);
    if (answers.email && read(key("email")) === answers.email) write(key("email"), null);
    delete m.prechat;
    m.awaiting_form = answers;
    setPending(queued);
    const el = byClientId.get(cid);
    if (el) setMeta(el, "sending", t("sending"));
    if (!preFields) showPrechat(asked, answers);
    if (first) showError(text);
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
