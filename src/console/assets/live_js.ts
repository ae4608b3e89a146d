/**
 * The live pages' script, embedded and served at a hashed name by
 * `../assets.ts`: it opens the console's one server-sent-events stream
 * (`/events`, see `../live.ts`) while the tab is visible and closes it while
 * it is hidden, and writes each value of a snapshot into the element whose
 * `data-live` names its place (a JSON array of keys:
 * `["queues","mail","available"]`), as text, never as markup. An element
 * with `data-live-changed` (the same kind of array) and `data-live-since`
 * (the value the page was drawn with) is shown (its `hidden` removed) once
 * the snapshot's value differs: the Work listing's "claims changed" notice.
 * A page with neither opens nothing.
 *
 * @module
 */

/** The text of `live.<hash>.js`. */
export const LIVE_JS = `"use strict";
(() => {
  const places = () => document.querySelectorAll("[data-live]");
  const notices = () => document.querySelectorAll("[data-live-changed]");
  if (places().length === 0 && notices().length === 0) return;
  const at = (snapshot, path) => {
    let value = snapshot;
    for (const key of JSON.parse(path)) value = value == null ? undefined : value[key];
    return value;
  };
  const format = new Intl.NumberFormat("en-US");
  let source = null;
  const show = (snapshot) => {
    for (const element of places()) {
      let value = snapshot;
      try {
        for (const key of JSON.parse(element.dataset.live)) {
          value = value == null ? undefined : value[key];
        }
      } catch {
        continue;
      }
      if (value && typeof value === "object" && "age" in value) value = value.age + " s";
      const cap = Number(element.dataset.liveCap || "0");
      const text = typeof value === "number"
        ? (cap > 0 && value >= cap ? format.format(cap) + "+" : format.format(value))
        : value === undefined ? (element.dataset.liveMissing ?? "0") : String(value);
      if (element.textContent !== text) element.textContent = text;
    }
    for (const element of notices()) {
      let value;
      try {
        value = at(snapshot, element.dataset.liveChanged);
      } catch {
        continue;
      }
      if (value !== undefined && String(value) !== element.dataset.liveSince) element.hidden = false;
    }
    document.body.dataset.liveSnapshots = String(Number(document.body.dataset.liveSnapshots || "0") + 1);
  };
  const open = () => {
    if (source !== null) return;
    source = new EventSource("/events");
    source.addEventListener("snapshot", (event) => show(JSON.parse(event.data)));
  };
  const close = () => {
    if (source === null) return;
    source.close();
    source = null;
  };
  document.addEventListener("visibilitychange", () => (document.hidden ? close() : open()));
  window.addEventListener("pagehide", close);
  if (!document.hidden) open();
})();
`;
