// Porch admin: times in the reader's own time zone. Pages render every time as
// <time datetime="…Z">1 Dec 2026, 14:05 UTC</time> (readable without scripts); on every
// signed-in page this rewrites them to the browser's local time: the time alone for today,
// the day and the time otherwise (with the weekday, for one marked data-with-day), the full
// local date and time as the tooltip. inbox.js calls
// porchLocalTime on the fragments its live stream adds. A time-zone field still holding the
// suggested UTC (a site's hours page before any hours are saved, `data-guess-zone`) gets the
// browser's own zone instead: most teams set hours where they sit. A form's hidden field marked
// `data-browser-zone` gets the reader's zone when the form is sent.
(() => {
  "use strict";

  const localTime = (root) => {
    const today = new Date().toDateString();
    for (const el of root.querySelectorAll("time[datetime]")) {
      const at = new Date(el.getAttribute("datetime"));
      if (Number.isNaN(at.getTime())) continue;
      el.title = at.toLocaleString();
      // data-with-day: beside a day of another zone ("opens Tuesday 15 December 2026 09:00
      // Asia/Tokyo"), a time alone would read as that day's.
      el.textContent = "withDay" in el.dataset
        ? at.toLocaleString([], {
          weekday: "long", day: "numeric", month: "short", hour: "numeric", minute: "2-digit",
        })
        : at.toDateString() === today
        ? at.toLocaleTimeString([], { timeStyle: "short" })
        : at.toLocaleDateString([], { day: "numeric", month: "short" }) + ", " +
          at.toLocaleTimeString([], { timeStyle: "short" });
    }
  };

  window.porchLocalTime = localTime;
  localTime(document);

  const guess = Intl.DateTimeFormat().resolvedOptions().timeZone;
  // A form that asks for the reader's time zone (Snooze until tomorrow, 9:00) has a hidden
  // field marked data-browser-zone, filled as it is sent: the side panel it sits in may have
  // been replaced live since the page loaded. Only marked ones: a site's hours form has a
  // time_zone field of its own, which the admin types.
  document.addEventListener("submit", (e) => {
    const zone = e.target.querySelector?.("input[data-browser-zone]");
    if (zone && guess) zone.value = guess;
  }, true);

  const zone = document.querySelector("input[data-guess-zone]");
  if (zone && zone.value === "UTC" && guess) zone.value = guess;
})();
