/**
 * The jobs list's filter as words and back: `state:discarded,retryable
 * queue:mail connection refused` is two states, a queue and the search
 * text. The search prompt reads these words ({@linkcode parseSearch}) and
 * opens with the current filter written in them ({@linkcode searchText});
 * the list's header shows the filter the same way ({@linkcode filterText}).
 * Pure.
 *
 * @module
 */

import { JOB_STATES, type JobState } from "../kernel/types.ts";
import { clean, plural } from "./text.ts";

/**
 * How many of the newest jobs (by id) a search of the jobs list reads: a
 * search can use no index, and on a large table each refresh would read
 * every row (half a second at a million jobs on SQLite, five on
 * PostgreSQL). `jobs ls --search` reads them all.
 */
export const SEARCH_WINDOW = 100_000;
/** Where a search's count stops: past it the list says "1000+". */
export const SEARCH_COUNT_CAP = 1000;

/** The filters of the jobs list (a subset of the store's `JobFilter`). */
export interface JobsFilter {
  /** Any of these states; none given (or empty) is any state. */
  states?: JobState[];
  queue?: string;
  scheduleId?: string;
  worker?: string;
  tag?: string;
  search?: string;
}

/** How many jobs match the jobs list's filter, every page together. */
export interface JobsTotal {
  count: number;
  /** The count stopped at its cap ({@linkcode SEARCH_COUNT_CAP}): at least `count` match. */
  atLeast: boolean;
  /**
   * A search read only the newest `window` ids, those above `above`
   * ({@linkcode SEARCH_WINDOW}): its pages and its count leave older jobs
   * out. Null when it read every job, or for a filter without a search.
   */
  newest: { window: number; above: number } | null;
}

/** The `key:value` words of the search prompt and the one-value filter field each sets, in writing order. */
export const FILTER_KEYS: Record<string, Exclude<keyof JobsFilter, "search" | "states">> = {
  queue: "queue",
  schedule: "scheduleId",
  worker: "worker",
  tag: "tag",
};

/** The states of `filter` in JOB_STATES order, or none when it takes any state. */
export function statesOf(filter: JobsFilter): JobState[] {
  const states = filter.states ?? [];
  return JOB_STATES.filter((s) => states.includes(s));
}

/** True when `filter` selects nothing: every job matches. */
export function unfiltered(filter: JobsFilter): boolean {
  return statesOf(filter).length === 0 &&
    Object.values(FILTER_KEYS).every((field) => filter[field] === undefined) &&
    filter.search === undefined;
}

/** The filter's fields as `key:value` words (`state:` first), then its search text as `search` writes it. */
export function filterWords(filter: JobsFilter, search: (text: string) => string): string[] {
  const states = statesOf(filter);
  const words = [
    ...(states.length > 0 ? [`state:${states.join(",")}`] : []),
    ...Object.entries(FILTER_KEYS).flatMap(([key, field]) =>
      filter[field] === undefined ? [] : [`${key}:${filter[field]}`]
    ),
  ];
  return filter.search === undefined ? words : [...words, search(filter.search)];
}

/**
 * Whether `total` counted every job that matches: not stopped at the cap,
 * not bounded to the newest jobs (as a search's may be).
 */
export function exactTotal(total: JobsTotal): boolean {
  return !total.atLeast && total.newest === null;
}

/**
 * `391 jobs match`, `1000+ jobs match`, `12 jobs match among the newest
 * 100000`: the total as the list's header says it, bounds named.
 */
export function totalText(total: JobsTotal): string {
  const count = total.atLeast ? `${total.count}+ jobs` : plural(total.count, "job");
  return `${count} match${newestText(total)}`;
}

/** ` among the newest 100000` for a total bounded to the newest jobs, else nothing. */
export function newestText(total: JobsTotal | null): string {
  return total?.newest ? ` among the newest ${total.newest.window}` : "";
}

/** `state:discarded queue:default search:"timeout"`, or `all jobs`. */
export function filterText(filter: JobsFilter): string {
  const words = filterWords(filter, (text) => `search:${JSON.stringify(text)}`);
  return words.length === 0 ? "all jobs" : words.join(" ");
}

/** The filter as the search prompt takes it (what `/` opens with). */
export function searchText(filter: JobsFilter): string {
  return filterWords(filter, (text) => text).join(" ");
}

/**
 * `state:discarded,retryable queue:mail timeout` -> a filter: `key:value`
 * words for the fields (`state:` takes states separated by commas), the
 * other words (joined by one space) as the search text. A word that is not
 * a state is an error naming it.
 */
export function parseSearch(text: string): { filter: JobsFilter } | { error: string } {
  const filter: JobsFilter = {};
  const rest: string[] = [];
  for (const word of text.trim().split(/\s+/).filter((w) => w !== "")) {
    const match = /^([a-z]+):(.+)$/.exec(word);
    const name = match?.[1];
    if (name === "state") {
      const states: JobState[] = [...(filter.states ?? [])];
      for (const value of match![2]!.split(",").filter((v) => v !== "")) {
        if (!(JOB_STATES as readonly string[]).includes(value)) {
          return {
            error: `state "${clean(value)}" is not a job state (${JOB_STATES.join(", ")})`,
          };
        }
        if (!states.includes(value as JobState)) states.push(value as JobState);
      }
      filter.states = JOB_STATES.filter((s) => states.includes(s));
      continue;
    }
    // Own keys only: `constructor:x` is search text, not Object.prototype's.
    const field = name !== undefined && Object.hasOwn(FILTER_KEYS, name)
      ? FILTER_KEYS[name]
      : undefined;
    if (!match || !field) {
      rest.push(word);
      continue;
    }
    filter[field] = match[2]!;
  }
  if (rest.length > 0) filter.search = rest.join(" ");
  return { filter };
}
