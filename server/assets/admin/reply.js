// Porch admin: the reply box of a conversation page, on top of its plain form (app/src/reply.rs).
// - Enter sends, Shift+Enter starts a new line (on a touch screen Enter starts a new line and the
//   button sends); posts the same form with fetch, keeps the text (and a draft in sessionStorage)
//   until the server confirms it stored it, and inserts only an answer marked as the message
//   fragment. Attach files (shown only with this script) uploads each picked file with the CSRF
//   token in a header; the reply names them.
// - Tells the visitor the agent is typing, in reply mode only (never while a private note is
//   written): at most once per 3 s, stopped on send, blur, 5 s idle or a switch to note;
//   colleagues with the page open see it as "Ana is replying…".
// inbox.js, loaded first, places messages in the thread and keeps the drafts (window.porchInbox).
(() => {
  "use strict";
  const form = document.getElementById("reply-form");
  const messages = document.getElementById("messages");
  if (!form || !messages || !window.porchInbox) return;
  const { fromHtml, addMessage, drafts } = window.porchInbox;
  // How long a send may go unanswered before the box says so (a resend posts nothing twice).
  const SEND_TIMEOUT_MS = 20000;
  const box = form.querySelector("textarea");
  const key = new URL(form.action, location.href).pathname;
  if (!box.value) box.value = drafts.get(key) || "";
  // Why the last send failed (reply.rs; it describes the box). An edit answers it: it goes, and
  // the box is no longer marked invalid.
  const error = document.getElementById("reply-error");
  const clearError = () => {
    error.replaceChildren();
    box.removeAttribute("aria-invalid");
  };
  box.addEventListener("input", () => {
    drafts.set(key, box.value);
    clearError();
  });
  const link = (href, text) => {
    const a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    return a;
  };
  // The sign-in page comes back here, where the draft is restored with a fresh form token.
  // The agent's typing, shown to the visitor; a lost signal only means a missing "typing…".
  let typingSince = 0;
  let typingIdle = null;
  const sendTyping = (active) => {
    const body = new URLSearchParams({ csrf: form.elements.csrf.value, active: String(active) });
    fetch(form.dataset.typing, {
      method: "POST", body, credentials: "same-origin", redirect: "manual", headers: { "x-porch-fetch": "1" },
    }).catch(() => {});
  };
  const stopTyping = () => {
    clearTimeout(typingIdle);
    if (typingSince) { typingSince = 0; sendTyping(false); }
  };
  // Reply or private note: chosen before writing, and only a reply is announced as typing. The
  // choice is kept beside the draft, so a note restored after signing in again is still a note;
  // without a draft the page opens on Reply, the default: an agent back on a conversation where
  // they once added a note typed answers the visitor never got.
  const modeKey = key + "#kind";
  const mode = () => form.elements.kind.value;
  const label = form.querySelector("label[for=reply-body]");
  const showMode = () => {
    const note = mode() === "note";
    box.placeholder = note ? "Write a private note (only your team sees it)\u2026" : "Write a reply\u2026";
    label.textContent = note ? "Your private note" : "Your reply";
  };
  // Set either way: a browser that restores a form's state on reload (Firefox) would keep a note.
  form.querySelector(`[name=kind][value=${box.value && drafts.get(modeKey) === "note" ? "note" : "reply"}]`).checked = true;
  for (const radio of form.elements.kind) {
    radio.addEventListener("change", () => {
      showMode();
      drafts.set(modeKey, mode() === "note" ? "note" : "");
      if (mode() === "note") stopTyping();
    });
    // A click takes the agent on to writing; arrow keys stay in the group (announced there).
    radio.addEventListener("click", (e) => { if (e.detail > 0) box.focus(); });
  }
  showMode();
  if (form.dataset.typing) {
    box.addEventListener("input", () => {
      if (!box.value.trim() || mode() !== "reply") { stopTyping(); return; }
      if (Date.now() - typingSince >= 3000) { typingSince = Date.now(); sendTyping(true); }
      clearTimeout(typingIdle);
      typingIdle = setTimeout(stopTyping, 5000);
    });
    box.addEventListener("blur", stopTyping);
  }

  // Files for a reply (docs/widget.md, "Attachments"): each is uploaded when picked, with the form's
  // CSRF token in a header (the body is the file); the reply then names the uploads in `attachments`.
  let files = []; // {li, note, id (once stored), busy}
  const tray = document.getElementById("reply-files");
  const picker = document.getElementById("reply-file");
  const sizeText = (n) => (n < 1e3 ? `${n} bytes` : n < 1e6 ? `${Math.round(n / 1e3)} KB` : `${(n / 1e6).toFixed(1)} MB`);
  const showTray = () => {
    tray.hidden = !files.length;
    // A reply may be just files.
    box.required = !files.some((f) => f.id);
  };
  const uploadFile = async (file) => {
    const note = document.createElement("span");
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "button";
    remove.textContent = "Remove";
    remove.setAttribute("aria-label", `Remove ${file.name}`);
    const li = document.createElement("li");
    li.append(`${file.name} (${sizeText(file.size)}) `, note, remove);
    const entry = { li, busy: true };
    remove.addEventListener("click", () => { files = files.filter((f) => f !== entry); li.remove(); showTray(); });
    files.push(entry);
    tray.append(li);
    showTray();
    note.textContent = "uploading\u2026";
    try {
      const res = await fetch(`${form.dataset.attachments}?name=${encodeURIComponent(file.name)}`, {
        method: "POST", body: file, credentials: "same-origin", redirect: "manual",
        headers: { "x-porch-csrf": form.elements.csrf.value },
      });
      const answer = await res.json().catch(() => null);
      if (res.status === 201 && answer?.id) {
        entry.id = answer.id;
        note.textContent = "ready";
      } else {
        li.dataset.failed = "";
        note.textContent = `not uploaded: ${answer?.error?.message || `the server answered ${res.status}.`}`;
      }
    } catch {
      li.dataset.failed = "";
      note.textContent = "not uploaded: no answer from the server.";
    }
    entry.busy = false;
    showTray();
  };
  if (tray && picker && form.dataset.attachments) {
    picker.closest(".reply-attach").hidden = false;
    picker.addEventListener("change", () => {
      for (const file of picker.files) uploadFile(file);
      picker.value = "";
    });
  }

  const here = location.pathname + location.search;
  const signIn = () => link(`/login?next=${encodeURIComponent(here)}`, "Sign in");
  const reload = () => link(here, "Reload");

  // What went wrong, in words, from an answer that is not the message fragment.
  const failure = async (res) => {
    let code = "", message = "";
    if ((res.headers.get("content-type") || "").startsWith("application/json")) {
      try { ({ code, message } = (await res.json()).error); } catch { /* no usable body */ }
    }
    if (res.status === 401 || res.type === "opaqueredirect") {
      // A redirect from a write is a sign-in wall (ours answers 401; a proxy may redirect).
      return ["Signed out: sign in again, your text is kept. ", signIn()];
    }
    if (code === "form_expired") {
      return ["This page is out of date (you signed in again since it was opened): reload it, your text is kept. ",
        reload()];
    }
    if (res.status >= 500) {
      return [`Not sent: the server could not store it (${res.status}). Try again in a moment; your text is kept.`];
    }
    if (res.ok) {
      // 200 but not our fragment: the server may have stored it, so say what we know.
      return ["Not confirmed: the server's answer was not the message. Reload to see whether it arrived; your text is kept. ",
        reload()];
    }
    return [`Not sent: ${message || `the server answered ${res.status}.`} Your text is kept.`];
  };

  // Each message has its own id (the page's first one is in the form): a resend of the same
  // text after a lost answer stores nothing new, and edited text is a new message.
  const newId = () => Array.from(crypto.getRandomValues(new Uint8Array(16)),
    (b) => b.toString(16).padStart(2, "0")).join("");
  let idTried = null; // what was last sent under the current id

  let sending = false;
  const send = async (kind) => {
    const ready = files.filter((f) => f.id);
    if (sending) return;
    // Nothing to send: Enter does nothing, but an earlier failure is no longer news.
    if (!box.value.trim() && (kind === "note" || !ready.length)) {
      clearError();
      return;
    }
    if (files.some((f) => f.busy)) { error.replaceChildren("Wait until the files are uploaded."); return; }
    if (kind === "note" && ready.length) {
      error.replaceChildren("Notes carry no files: send them with a reply, or remove them.");
      return;
    }
    sending = true;
    stopTyping();
    clearError();
    const body = new URLSearchParams(new FormData(form));
    body.set("kind", kind);
    body.delete("attachments");
    if (ready.length) body.set("attachments", ready.map((f) => f.id).join(","));
    const attempt = [kind, body.get("attachments"), box.value].join("\n");
    if (idTried !== null && idTried !== attempt) form.elements.client_id.value = newId();
    body.set("client_id", form.elements.client_id.value);
    idTried = attempt;
    // The text stays in the box (read-only meanwhile) until the server confirms it stored it.
    const text = box.value;
    drafts.set(key, text);
    box.readOnly = true;
    form.setAttribute("aria-busy", "true");
    try {
      let res;
      try {
        // Not forever: a request the browser holds back (all its connections to the host busy)
        // or a server that never answers would leave the box read-only with nothing said.
        res = await fetch(form.action, {
          method: "POST", body, credentials: "same-origin", redirect: "manual",
          headers: { "x-porch-fetch": "1" }, signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
        });
      } catch {
        // The request may or may not have reached the server: the live stream shows it if so.
        error.append("No answer from the server: check your connection. Your text is kept: " +
          "send it again, it will not be posted twice.");
        return;
      }
      const item = res.status === 200 && res.headers.get("x-porch-fragment") === "message"
        ? fromHtml(await res.text()) : null;
      if (!item?.matches("li.message[id^='message-']")) {
        error.append(...await failure(res));
        // 422: the server refused the text itself (empty or too long), so the box is invalid.
        if (res.status === 422) box.setAttribute("aria-invalid", "true");
        return;
      }
      addMessage(item.outerHTML);
      messages.scrollTop = messages.scrollHeight;
      form.elements.client_id.value = newId();
      idTried = null;
      box.value = "";
      drafts.set(key, "");
      drafts.set(modeKey, "");
      if (ready.length) {
        for (const f of ready) f.li.remove();
        files = files.filter((f) => !ready.includes(f));
        showTray();
      }
    } finally {
      box.readOnly = false;
      form.removeAttribute("aria-busy");
      sending = false;
      box.focus();
    }
  };
  // A touch screen's only pointer is coarse (a phone, a tablet): its keyboard has no
  // Shift+Enter, so there Enter starts a new line and the Send button sends.
  const touchOnly = window.matchMedia("(pointer: coarse) and (not (any-pointer: fine))");
  box.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing && !touchOnly.matches) {
      e.preventDefault();
      send(mode());
    }
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    // The pressed button decides where a browser without :has() shows both (admin.css).
    const pressed = e.submitter?.classList;
    send(pressed?.contains("note-send") ? "note" : pressed?.contains("reply-send") ? "reply" : mode());
  });
})();
