/**
 * The console's script, embedded in the program and served at a hashed
 * name by `../assets.ts`: small progressive enhancement, nothing a page
 * needs to work. Written here rather than vendoring htmx: the pages of this
 * first increment are plain forms and links, and a dozen lines cost no
 * drift test; a page that needs partial updates or server-sent events adds
 * its own embedded asset beside this one (see `../assets.ts`).
 *
 * What it does: a form with `data-confirm="text"` asks before it submits;
 * an element with `data-autofocus` takes the focus. No inline handler, no
 * `eval`, no inline style: the Content-Security-Policy allows none.
 *
 * @module
 */

/** The text of `app.<hash>.js`. */
export const APP_JS = `"use strict";
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement)) return;
  const question = form.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});
document.addEventListener("DOMContentLoaded", () => {
  const first = document.querySelector("[data-autofocus]");
  if (first instanceof HTMLElement) first.focus();
});
`;
