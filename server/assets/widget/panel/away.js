// Part of the chat panel (served as /widget/panel.js): server/src/widget/panel_source.rs puts the parts in one
// async function, in its order; they share its scope.
// This part: the email form (the offline capture) and the away notice of business hours.

  // --- the offline capture

  let emailWanted = null;
  let agentsOnline = false;
  let mailsReplies = false;
  const saveEmail = () => {
    // Asked again: the server's answer marks it anew.
    markInvalid(emailInput, false);
    const email = emailInput.value.trim();
    // Refused here, as the server would: nothing is sent, and a visitor who has not written yet
    // hears the address's fault, not that an address needs a message first.
    if (email && !emailInput.checkValidity()) { badEmail(); return; }
    if (!email) return;
    showError("");
    // Held needs no connection; sent does.
    if (holdEmail(email) || !isReady) return;
    emailWanted = email;
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
  const emailParts = [...emailForm.children]; // before a confirmation replaces them (restart puts them back)
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
    // Nearly six days or more away (5e8 ms; a holiday), a weekday alone could be next week's: the date too.
    const day = at && at.toDateString() !== new Date().toDateString()
      && at.toLocaleDateString(tag, { weekday: "long", ...(at - new Date() > 5e8 && { month: "long", day: "numeric" }) });
    const asksEmail = site.out_of_hours !== "accept" && mailsReplies;
    away.replaceChildren(...[ownText(site.away_messages, typeof site.away_message === "string" && site.away_message),
      at && t(day ? "back_on" : "back_at", { day, time }), !asksEmail && mailsReplies && t("away_reply")]
      .filter(Boolean).map((text) => h("p", { text, dir: "auto" })));
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
    if (wrote) return false;
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
  // The address's fault, said and marked (the panel's check, or the server's refusal).
  const badEmail = () => {
    showError(t("bad_email"));
    markInvalid(emailInput, true);
  };
  emailInput.addEventListener("input", () => { if (emailInput.checkValidity()) markInvalid(emailInput, false); });
