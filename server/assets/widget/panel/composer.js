// Part of the chat panel (served as /widget/panel.js): server/src/widget/panel_source.rs puts the parts in one
// async function, in its order; they share its scope.
// This part: the composer, then the start: show what waits, connect, open.

  // --- the composer

  // Also keeps what the box holds (the draft), so a reload or the next page of the site loses nothing.
  const grow = () => {
    saveDraft();
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight, 140)}px`;
    // Counted as the server counts: without the white space it trims at both ends.
    const n = [...input.value.trim()].length;
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

  // Messages left unacked by an earlier page show at once; they are resent after welcome. What the box held
  // is back in it.
  for (const m of pending()) showOwn(m);
  if ((input.value = draft())) grow();
  connect();
  focusWhenReady = P.focus === true; // not when the launcher reopens the chat by itself on a new page
  setOpen(P.open === true, focusWhenReady);
