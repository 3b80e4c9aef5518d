// Porch admin: a form marked `data-confirm="question"` asks before it posts (disabling a user,
// resetting their two-factor, requiring it for the team: each signs people out); with
// `data-confirm-when="field"` only while that checkbox is ticked. Without JavaScript the form
// posts at once, as every form of the admin UI works without it.
(() => {
  "use strict";
  document.addEventListener("submit", (event) => {
    const form = event.target.closest("form[data-confirm]");
    if (!form) return;
    const when = form.dataset.confirmWhen;
    if (when && !form.elements[when]?.checked) return;
    if (!window.confirm(form.dataset.confirm)) event.preventDefault();
  });
})();
