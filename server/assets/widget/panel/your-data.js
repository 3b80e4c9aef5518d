// Part of the chat panel (served as /widget/panel.js): server/src/widget/panel_source.rs puts the parts in one
// async function, in its order; they share its scope.

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
    // The text in the box goes with the rest.
    input.value = "";
    for (const k of ["token", "pending", "email", "seen", "draft"]) write(key(k), null);
    restart();
    showError(t("erased"), 0, true);
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
    attr(list, "aria-live", "off"); // the next visitor's history is not news either
    agentReplied = false; // nobody has answered the next visitor: the email form may be offered
    // The email form as new: an address given or confirmed was the old visitor's.
    emailForm.replaceChildren(...emailParts);
    emailForm.hidden = true;
    emailInput.value = heldEmail = emailWanted = null;
    wrote = false;
    for (const u of uploads) u.xhr?.abort(); // the files were the old visitor's
    dropUploads(uploads);
    drop();
    connect();
  };
  // Whom the panel speaks as; not read back from c.user, which the launcher sets before it tells us.
  let speaksAs = writer();
  P.identify = (u) => {
    c.user = u || undefined;
    // Someone else at the browser (a logout, another user) must not find, nor send, the text in the box.
    if (speaksAs !== writer()) { speaksAs = writer(); input.value = ""; grow(); }
    restart();
  };
