/**
 * The keyboard of the Jobs and Job pages, embedded in the program and
 * served at a hashed name by `../assets.ts`; the pages link it and work
 * without it. Keys (none while typing in a field, none with a modifier):
 *
 * - `/` focuses the search field of the jobs filter (`[data-filter]`);
 * - `j` / `k` move the focus to the next / previous job's link of the list
 *   (`[data-job-link]`; the row shows the focus);
 * - `r` on a job's page opens its retry form (`details#retry`) and focuses
 *   its reason: the confirmation, since the form still needs the reason
 *   and a click to submit.
 *
 * No inline handler, no `eval`: the Content-Security-Policy allows none.
 *
 * @module
 */

/** The text of `jobs.<hash>.js`. */
export const JOBS_JS = `"use strict";
(() => {
  const typing = (t) => t instanceof HTMLElement &&
    (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName) && t.type !== "checkbox");
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (event.key === "/") {
      const filter = document.querySelector("[data-filter]");
      if (!(filter instanceof HTMLElement)) return;
      event.preventDefault();
      filter.focus();
    } else if (event.key === "j" || event.key === "k") {
      const links = [...document.querySelectorAll("[data-job-link]")];
      if (links.length === 0) return;
      const at = links.indexOf(document.activeElement);
      const step = event.key === "j" ? 1 : -1;
      const next = at < 0 ? 0 : Math.min(links.length - 1, Math.max(0, at + step));
      event.preventDefault();
      links[next].focus();
    } else if (event.key === "r") {
      const retry = document.getElementById("retry");
      if (!(retry instanceof HTMLDetailsElement)) return;
      event.preventDefault();
      retry.open = true;
      const reason = retry.querySelector("input[name=reason]");
      if (reason instanceof HTMLElement) reason.focus();
    }
  });
})();
`;
