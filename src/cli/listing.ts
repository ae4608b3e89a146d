/**
 * The shape the listing commands share (`jobs workflows`, `jobs pipelines`,
 * `jobs drops <pipeline>`): the store opened read only, what the command
 * asks of it, then the items as JSON with `--json`, else one line saying
 * nothing matched, else the listing's lines (a table, most often).
 *
 * @module
 */

import type { Command } from "commander";
import type { Store } from "../store/store.ts";
import { type CliDeps, dbPath, globalOptions } from "./common.ts";
import { withStore } from "./store/open.ts";
import { safeJson, table } from "./text.ts";

/** How a listing prints its items. */
export interface Listing<T> {
  /** One item as `--json` prints it (instants as ISO UTC). */
  json(item: T): unknown;
  /** The line printed when no item matches. */
  none: string;
  /** The lines of the items, never none; `now` is when the command began, for ages. */
  lines(items: readonly T[], now: number): string[];
}

/** A listing's lines as a table: `header`, then one row of `cells` per item. */
export function tableLines<T>(
  header: string[],
  cells: (item: T, now: number) => string[],
): Listing<T>["lines"] {
  return (items, now) => table([header, ...items.map((item) => cells(item, now))]);
}

/**
 * The global options of a listing of what the store holds: `--db` read
 * only and `--json`; no schedules file and no audit. `reasonFilters` when
 * the command's own `--reason` filters (see {@linkcode globalOptions}).
 */
export function listingOptions(command: Command, audit: { reasonFilters?: true } = {}): Command {
  return globalOptions(command, {
    db: { mode: "read" },
    config: { not: "it lists what the store holds; the file plays no part" },
    json: true,
    audit: { not: "it only reads: nothing to audit", ...audit },
  });
}

/**
 * Opens the store of `options.db` read only for `command`, asks `list` for
 * the items and prints them as `listing` says.
 */
export async function printListing<T>(
  command: string,
  options: { db?: string; json?: boolean },
  deps: CliDeps,
  list: (store: Store, now: number) => Promise<readonly T[]>,
  listing: Listing<T>,
): Promise<void> {
  const now = deps.clock.now();
  await withStore(command, dbPath(options.db, deps), "read", deps, async (store) => {
    const items = await list(store, now);
    if (options.json) deps.out(safeJson(items.map((item) => listing.json(item))));
    else if (items.length === 0) deps.out(listing.none);
    else for (const line of listing.lines(items, now)) deps.out(line);
  });
}
