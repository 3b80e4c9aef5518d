(function (c) {
  // Porch launcher, inline in the host page: draws the button and the page's JS API (window.Porch, see
  // docs/widget.md), and requests nothing from Porch until the visitor clicks, the page calls open() or
  // toggle(), the chat was open in this tab, or this visitor has messages waiting to be sent. panel.js takes
  // over. The empty catches are on purpose: nothing may throw into the host page, and without storage the
  // chat just does not reopen.
  try {
    const w = window, d = document, K = "porch:" + c.site + ":open";
    // Calls queued as Porch.push([name, ...args]) before the snippet ran; a second snippet leaves the first.
    // Anything else called Porch (an element with id="Porch", which browsers expose as window.Porch) is no queue.
    const P = w.Porch, q = Array.isArray(P) || (P && P.on) ? P : [];
    if (!q.push || q.on) return;
    // Event handlers by name; no prototype, so `on("constructor", f)` finds no array to push to.
    const H = Object.create(null);
    let btn, isOpen = false, asked, early, go, opener;
    // A handler that throws is reported on its own (asynchronously), never to the chat or other handlers.
    // `open` and `close` come with no argument at all (docs/widget.md), `message` with its one.
    const emit = (n, ...v) => (H[n] || []).slice().forEach((f) => {
      try { f(...v); } catch (e) { setTimeout(() => { throw e; }); }
    });
    // want: true open, false close, undefined toggle. Before the button exists, the last call waits for it.
    const act = (want) => {
      if (btn) go(want); else { asked = 1; early = want; }
    };
    const api = w.Porch = {
      open: () => act(true), close: () => act(false), toggle: () => act(),
      // Event names are strings: any other name is unknown (an object could throw turned into one).
      on: (n, f) => { if (typeof f == "function" && typeof n == "string") (H[n] = H[n] || []).push(f); },
      off: (n, f) => { if (typeof n == "string") H[n] = (H[n] || []).filter((g) => g !== f); },
      // The identity section of docs/widget.md explains the fields; a running panel takes them at once.
      identify: (u) => {
        c.user = u;
        try { w.__porch.identify(u); } catch (e) {} // not loaded yet, or a panel without identity
      },
      push: (a) => { try { api[a[0]](...a.slice(1)); } catch (e) {} },
    };
    q.forEach(api.push);
    const color = /^#([0-9a-f]{3}){1,2}$/i.test(c.color) ? c.color : "#2563eb";
    let saved = null, waiting = false;
    try { saved = sessionStorage.getItem(K); } catch (e) {}
    // Messages this visitor wrote that are not sent yet (a tab closed while offline): the panel loads, closed,
    // and sends them, as a page of the tab where they were written would. Each names whom it was written as;
    // one waiting for the pre-chat form's answers cannot go before the visitor opens the chat.
    try {
      const u = c.user, me = u && u.id != null ? String(u.id).trim() : null;
      waiting = JSON.parse(localStorage.getItem("porch:" + c.site + ":pending"))
        .some((m) => !m.awaiting_form && (m.as ?? null) === me);
    } catch (e) {}
    // White or black text on the site colour, whichever contrasts more (WCAG luminance).
    const hex = color.length < 5 ? color.replace(/\w/g, "$&$&") : color;
    const lum = [1, 3, 5].reduce((s, i, j) => {
      const v = parseInt(hex.substr(i, 2), 16) / 255;
      return s + [0.2126, 0.7152, 0.0722][j] * (v < 0.04 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    }, 0);
    const F = "system-ui,-apple-system,'Segoe UI',Roboto,sans-serif";
    const side = c.position === "left" ? "left" : "right";

    const mount = () => {
      try {
        if (d.getElementById("porch-chat")) return;
        const host = d.createElement("div");
        host.id = "porch-chat";
        // Inline !important beats every host-page rule, !important ones included.
        host.style.cssText = "all:initial!important;position:fixed!important;z-index:2147483000!important;" +
          "display:block!important;visibility:visible!important;opacity:1!important";
        host.style.setProperty("--pc", color, "important");
        // Contrast with white is 1.05/(L+.05), with black (L+.05)/.05: the better is 4.58:1 at least.
        host.style.setProperty("--pf", 1.05 / (lum + 0.05) < (lum + 0.05) / 0.05 ? "#000" : "#fff", "important");
        const root = host.attachShadow({ mode: "open" });
        const css = ".l{position:fixed;bottom:20px;" + side + ":20px;z-index:1;display:flex;" +
          "align-items:center;gap:8px;box-sizing:border-box;height:52px;margin:0;padding:0 20px 0 16px;" +
          "border:0;border-radius:26px;background:var(--pc);color:var(--pf);font:600 15px/1 " + F + ";" +
          "cursor:pointer;box-shadow:0 6px 24px #0003}" +
          // The lift on hover is motion: only for visitors who have not asked their system to reduce it.
          "@media (prefers-reduced-motion:no-preference){.l{transition:transform .15s}.l:hover{transform:translateY(-2px)}}" +
          ".l[hidden]{display:none}.l:focus-visible{outline:3px solid #111827;outline-offset:3px;" +
          "box-shadow:0 0 0 3px #fff}.l[aria-busy]{cursor:progress;opacity:.85}" +
          ".l svg{width:24px;height:24px}.l[data-unread]::after{content:'';position:absolute;top:0;" + side +
          ":0;width:12px;height:12px;border-radius:50%;background:#dc2626;border:2px solid #fff}" +
          ".n{position:fixed;bottom:82px;" + side + ":20px;max-width:260px;margin:0;padding:10px 14px;" +
          "border-radius:10px;background:#111827;color:#fff;font:14px/1.4 " + F + ";box-shadow:0 4px 16px #0003}" +
          ".n[hidden]{display:none}@media (max-width:480px){.l{padding:0 14px}.l span{display:none}}";
        // dir=auto: the label's own direction, not the page's (all:initial keeps the page's `direction`), so an
        // English label stays icon-first on a right-to-left page and an Arabic one mirrors on any page.
        root.innerHTML = "<p class=n data-porch=unavailable role=status dir=auto hidden>Chat is unavailable, try again</p>" +
          "<button class=l type=button data-porch=launcher aria-expanded=false dir=auto><svg viewBox='0 0 24 24' " +
          "fill=none stroke=currentColor stroke-width=2 stroke-linejoin=round aria-hidden=true>" +
          "<path d='M21 12a8 8 0 0 1-11.8 7L4 20.5l1.5-4.9A8 8 0 1 1 21 12z'/></svg><span></span></button>";
        // A constructed sheet, not a <style> element: a strict CSP (no style-src 'unsafe-inline') allows it.
        try {
          const sheet = new CSSStyleSheet();
          sheet.replaceSync(css);
          root.adoptedStyleSheets = [sheet];
        } catch (e) {
          root.prepend(d.createElement("style"));
          root.firstChild.textContent = css;
        }
        const note = root.querySelector("p");
        btn = root.querySelector("button");
        // "launcher": false in the config: no button; the site opens the chat with Porch.open().
        btn.hidden = c.launcher === false;
        const label = String(c.label || "Chat with us");
        btn.lastChild.textContent = label;
        btn.setAttribute("aria-label", label);
        // Their language, so a screen reader pronounces them right (the host page's was taken): the
        // site's fixed language, English for the default label and the note; a label written by
        // hand is taken to be in the page's.
        const lang = c.locale || (label == "Chat with us" && "en");
        if (lang) btn.lang = lang;
        note.lang = "en";
        let loading = false;

        // The panel reports each open and close; the next page in this tab reopens the chat the same way.
        const state = (open) => {
          btn.setAttribute("aria-expanded", open);
          try { sessionStorage.setItem(K, open ? "open" : "closed"); } catch (e) {}
          if (open === isOpen) return;
          isOpen = open;
          // Without our button, focus goes back to the element that opened the chat (the site's own button).
          if (!open && btn.hidden && opener) { opener.focus(); opener = null; }
          emit(open ? "open" : "close");
        };
        const load = (open, focus) => {
          const P = w.__porch;
          if (P && P.toggle) return P.toggle();
          if (loading) return;
          loading = true;
          note.hidden = true;
          btn.setAttribute("aria-busy", "true");
          w.__porch = { c, root, open, focus, state, emit };
          const s = d.createElement("script");
          s.src = c.url + "/widget/panel.js";
          s.async = true;
          s.onload = s.onerror = (e) => {
            loading = false;
            btn.removeAttribute("aria-busy");
            // Server down: say so when the visitor asked, and let the next click try again.
            if (e.type === "error") { s.remove(); note.hidden = !open; }
          };
          (d.head || d.body).appendChild(s);
        };
        go = (want) => {
          try {
            const P = w.__porch;
            if (want === undefined) want = loading ? !P.open : !isOpen;
            if (want && !isOpen) opener = d.activeElement;
            if (P && P.toggle) { if (want !== isOpen) P.toggle(); }
            else if (loading) P.open = P.focus = want;
            else if (want) load(true, true);
          } catch (e) {}
        };
        btn.addEventListener("click", () => { try { load(true, true); } catch (e) {} });
        d.body.appendChild(host);
        // A close() before the button existed wins over reopening: the panel loads closed if it loads.
        if (asked && early !== false) go(early);
        else if (saved || waiting) load(saved === "open" && !asked);
      } catch (e) {}
    };
    if (d.body) mount(); else d.addEventListener("DOMContentLoaded", mount);
  } catch (e) {}
})
