// Part of the chat panel (served as /widget/panel.js): server/src/widget/panel_source.rs puts the parts in one
// async function, in its order; they share its scope.

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
  // Bytes by Intl, which knows each language's words and plurals ("1 byte", "5 bytes", "1 octet").
  const sizeText = (n, round = Math.ceil) => (n < 1024
    ? n.toLocaleString(tag, { style: "unit", unit: "byte", unitDisplay: "long", useGrouping: false })
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
    for (const file of attachBtn.hidden ? [] : files) {
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
      // Not our JSON (a proxy's page): r stays unset.
      try { r = JSON.parse(xhr.responseText); } catch {}
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
  // A site that takes no files (welcome.site.files) hides the button: nothing is dropped or pasted either.
  panel.addEventListener("dragover", (e) => {
    if (attachBtn.hidden || !e.dataTransfer?.types.includes("Files")) return;
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
