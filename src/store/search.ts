/**
 * A search of the jobs ({@linkcode JobFilter.search}) matches what a reader
 * is shown, not what the store holds: args redacted as every view redacts
 * them (`redactValue`), stored errors redacted again with today's rules,
 * worker, tags and occurrence as they are. Otherwise `ls --search PASS-2`
 * would find the job whose args read `password=[REDACTED]` everywhere, and
 * anyone allowed to read could recover a secret one character at a time.
 *
 * The stores cannot redact in SQL, so a search reads in two steps: SQL
 * narrows the rows to those whose stored text holds {@linkcode rawSearch}
 * (a LIKE, as before), and {@linkcode shownMatches} keeps those whose shown
 * text holds the search. The first step loses no match because redaction
 * only cuts secrets out and puts `[REDACTED]` in their place (see
 * `kernel/redact.ts`): a match that does not overlap a mask is stored text
 * as it is, and the part of a search that cannot lie inside a mask must be
 * stored text too. {@linkcode SearchPaging} reads as many raw pages as a
 * page of matches takes, so a listing's `limit` and `after` keep their
 * meaning and the listing without a search is not touched.
 *
 * @module
 */

import { redact, REDACTED, redactValue } from "../kernel/redact.ts";
import type { Job } from "../kernel/types.ts";
import type { JobFilter, JobMatch } from "./store.ts";

const MASK = REDACTED.toLowerCase();

/**
 * Text that the stored fields of every job whose shown text holds `search`
 * hold too (case aside), or null when there is none: a search that may lie
 * wholly inside a `[REDACTED]` (`[REDACTED]`, `act`, `d]`) may match a job
 * whose stored text holds none of it.
 *
 * A mask can lie wholly inside a match only where the search spells it out,
 * and can overlap it only at its ends, so the search is cut at each
 * `[REDACTED]` it holds, its head loses its longest start that ends a mask
 * and its tail its longest end that starts one; every piece left is stored
 * text. The longest is the most selective.
 */
export function rawSearch(search: string): string | null {
  const lower = search.toLowerCase();
  if (MASK.includes(lower)) return null;
  const pieces: string[] = [];
  let from = 0;
  for (let at = lower.indexOf(MASK); at !== -1; at = lower.indexOf(MASK, from)) {
    pieces.push(search.slice(from, at));
    from = at + MASK.length;
  }
  pieces.push(search.slice(from));
  const first = pieces[0]!.toLowerCase();
  for (let k = Math.min(first.length, MASK.length - 1); k > 0; k--) {
    if (MASK.endsWith(first.slice(0, k))) {
      pieces[0] = pieces[0]!.slice(k);
      break;
    }
  }
  const lastAt = pieces.length - 1;
  const last = pieces[lastAt]!.toLowerCase();
  for (let k = Math.min(last.length, MASK.length - 1); k > 0; k--) {
    if (MASK.startsWith(last.slice(-k))) {
      pieces[lastAt] = pieces[lastAt]!.slice(0, -k);
      break;
    }
  }
  const longest = pieces.reduce((a, b) => (b.length > a.length ? b : a), "");
  return longest === "" ? null : longest;
}

/**
 * Whether `search` is in what a reader is shown of `job`, case aside: its
 * worker, its args as JSON once redacted, a tag, its occurrence or one of
 * its stored errors redacted (as the views show them).
 */
export function shownMatches(job: Job, search: string): boolean {
  const needle = search.toLowerCase();
  const has = (text: string) => text.toLowerCase().includes(needle);
  return has(job.worker) || has(JSON.stringify(redactValue(job.args)) ?? "") ||
    (job.occurrence !== null && has(job.occurrence)) || job.tags.some(has) ||
    job.errors.some((e) => has(redact(e.error)));
}

/**
 * Whether a listing or count of `params` goes through {@linkcode SearchPaging}:
 * it has a search, and not the empty one (which every job matches, shown or stored).
 */
export function searchesShown(params: JobMatch): boolean {
  return params.search !== undefined && params.search !== "";
}

/** The raw rows a counting search reads first. */
const COUNT_PAGE = 1000;
/** The fewest raw rows a listing with a search asks for first. */
const LIST_PAGE = 100;
/**
 * The most raw rows one read asks for: each read past the first asks for
 * twice the last, so a search whose stored matches are mostly secrets
 * spends its time matching rows, not in queries.
 */
const MAX_PAGE = 10_000;

/**
 * The raw listings a search reads, one after the other, and the matches
 * found: a store asks {@linkcode next} for the listing to read (its search
 * the {@linkcode rawSearch}, or none), reads it its own way and hands the
 * rows to {@linkcode take}, until `next` is null. A listing reads raw pages
 * past the last row read until its `limit` of matches is full or the rows
 * end; a count ({@linkcode SearchPaging.count}) reads oldest first from
 * 1000 rows a page and stops at `atMost` matches. Each page asks for twice
 * the rows of the last, up to 10,000.
 */
export class SearchPaging {
  /** The jobs matched so far, in listing order (none kept for a count). */
  readonly found: Job[] = [];
  /** How many jobs matched so far. */
  matched = 0;
  #search: string;
  #limit: number | undefined;
  #atMost: number | undefined;
  #keep: boolean;
  #page = LIST_PAGE;
  #next: JobFilter | null;

  /** The listing of `params` (it must have a search). */
  constructor(params: JobFilter) {
    this.#search = params.search!;
    // A limit it cannot page with goes to the store as given (which may refuse it).
    this.#limit = params.limit !== undefined && validLimit(params.limit) ? params.limit : undefined;
    this.#atMost = undefined;
    this.#keep = true;
    this.#next = this.#raw(params, params.limit);
  }

  /** The count of `params` (it must have a search), stopping at `atMost` when given. */
  static count(params: JobMatch, atMost?: number): SearchPaging {
    const paging = new SearchPaging({ ...params, limit: COUNT_PAGE });
    paging.#limit = undefined;
    paging.#atMost = atMost;
    paging.#keep = false;
    paging.#page = COUNT_PAGE;
    if (atMost === 0) paging.#next = null;
    return paging;
  }

  /** The raw listing to read next, or null when the search is done. */
  get next(): JobFilter | null {
    return this.#next;
  }

  /** Takes the rows the listing {@linkcode next} named read. */
  take(rows: Job[]): void {
    const asked = this.#next;
    if (asked === null) return;
    this.#next = null;
    for (const job of rows) {
      if (!shownMatches(job, this.#search)) continue;
      this.matched++;
      if (this.#keep) this.found.push(job);
      if (this.#full()) return;
    }
    // A page shorter than asked for is the last; so is a listing without a limit.
    const wanted = asked.limit;
    if (wanted === undefined || !validLimit(wanted) || rows.length < wanted) return;
    const remaining = this.#limit === undefined ? undefined : this.#limit - this.matched;
    this.#page = Math.min(this.#page * 2, MAX_PAGE);
    this.#next = this.#raw({ ...asked, after: rows.at(-1)!.id }, remaining ?? this.#page);
  }

  #full(): boolean {
    const cap = this.#limit ?? this.#atMost;
    return cap !== undefined && this.matched >= cap;
  }

  /** The raw listing of `params` past its after, asking for at least a page of rows. */
  #raw(params: JobFilter, remaining: number | undefined): JobFilter {
    const { search: _search, ...rest } = params;
    const raw = rawSearch(this.#search);
    const listing: JobFilter = raw === null ? rest : { ...rest, search: raw };
    if (remaining !== undefined && validLimit(remaining)) {
      listing.limit = Math.max(remaining, this.#page);
    }
    return listing;
  }
}

/** A limit the paging can page with; any other is handed to the store as given. */
function validLimit(limit: number): boolean {
  return Number.isSafeInteger(limit) && limit > 0;
}
