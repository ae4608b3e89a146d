/**
 * The statements of a jobs listing (`jobsList`, `jobsCountMatching`, see
 * jobs.ts), built by its shape: which filters are given, which states,
 * the order and the keyset bound. Values are always bound; the only
 * interpolations are the fixed fragments below and the names of job states.
 *
 * @module
 */

import { JOB_STATES, type JobState } from "../../kernel/types.ts";
import type { JobMatch } from "../store.ts";
import { escapeLike } from "./rows.ts";
import { checkState } from "./sql.ts";

/**
 * The bound values of a listing's filters and the shape they make: each
 * filter given is bound under its own name (a search as its LIKE pattern,
 * with :plain saying whether JSON writes it as it is).
 */
export function listValues(params: JobMatch): {
  values: Record<string, string | number>;
  shape: { filters: ListFilter[]; states: JobState[] | null };
} {
  const values: Record<string, string | number> = {};
  const given = (name: ListFilter, value: string | number | undefined) => {
    if (value !== undefined) values[name] = value;
  };
  given("ids", params.ids && JSON.stringify(params.ids));
  given("queue", params.queue);
  given("worker", params.worker);
  given("tag", params.tag);
  given("schedule", params.scheduleId);
  given("occurrence", params.occurrence);
  given("tenant", params.tenant);
  given("search", params.search === undefined ? undefined : `%${escapeLike(params.search)}%`);
  given("above", params.above);
  const filters = Object.keys(values) as ListFilter[];
  if (params.search !== undefined) {
    values.plain = JSON.stringify(params.search) === `"${params.search}"` ? 1 : 0;
  }
  const states = params.state === undefined
    ? null
    : Array.isArray(params.state)
    ? params.state
    : [params.state];
  return { values, shape: { filters, states } };
}

/** The optional filters of `jobsList`, each a fixed text whose value is bound. */
const LIST_FILTERS = {
  ids: `id IN (SELECT value FROM json_each(:ids))`,
  queue: `queue = :queue`,
  worker: `worker = :worker`,
  tag: `EXISTS (SELECT 1 FROM json_each(jobs.tags) WHERE value = :tag)`,
  // The IS NOT NULL lets the planner use the partial index jobs_schedule.
  schedule: `schedule_id = :schedule AND schedule_id IS NOT NULL`,
  occurrence: `occurrence = :occurrence`,
  tenant: `tenant = :tenant`,
  // :search reads the stored text: a listing with a search narrows its rows
  // with it, then keeps those whose shown (redacted) text matches
  // (src/store/search.ts). It is a LIKE pattern whose escape character is a
  // backslash. A search text that JSON writes as it is (:plain, no quote, backslash or
  // control character) can be inside a tag or an error only if it is inside
  // the array's text (the store writes both arrays with JSON.stringify or
  // json_object, which escape nothing else): that cheap test spares most
  // rows the JSON parse.
  search: `(worker LIKE :search ESCAPE '\\' OR args LIKE :search ESCAPE '\\'
      OR occurrence LIKE :search ESCAPE '\\'
      OR ((NOT :plain OR tags LIKE :search ESCAPE '\\')
        AND EXISTS (SELECT 1 FROM json_each(jobs.tags) WHERE value LIKE :search ESCAPE '\\'))
      OR ((NOT :plain OR errors LIKE :search ESCAPE '\\')
        AND EXISTS (SELECT 1 FROM json_each(jobs.errors)
          WHERE value ->> 'error' LIKE :search ESCAPE '\\')))`,
  // A range of the primary key: a bounded search reads the newest rows only.
  above: `id > :above`,
} as const;

/** The name of an optional `jobsList` filter (its bound parameter has the same name). */
export type ListFilter = keyof typeof LIST_FILTERS;

/**
 * States usually few and scattered among old ids, whose partial index holds
 * the id (as the rowid): a page of one of them reads that index and sorts
 * its ids, costing the size of the state, not of the table. Every other
 * listing walks the primary key in listing order and stops at the page's
 * end: cheap for dense states and for new jobs (available, scheduled) found
 * near the newest end, and never more than one pass over the table.
 */
const LIST_INDEX: Partial<Record<JobState, string>> = {
  executing: "jobs_executing",
  cancelled: "jobs_cancelled",
  discarded: "jobs_discarded",
};

/** What one `jobsList` statement is made of. */
export interface ListShape {
  /** The optional filters given. */
  filters: readonly ListFilter[];
  /** The states asked for, or null for any; each must be one of JOB_STATES. */
  states: readonly string[] | null;
  desc: boolean;
  /** Keyset paging: ids past :after in listing order. */
  after: boolean;
}

/**
 * The text of one `jobsList` statement: fixed fragments for the filters
 * given, the state names taken from JOB_STATES (a partial index is used
 * only when its state is a literal), values always bound (`:limit`, and
 * each filter under its own name). Ordered by id, so keyset paging with
 * `:after` walks an index instead of sorting the table.
 */
export function jobsListSql(shape: ListShape): string {
  const states = shape.states === null ? null : knownStates(shape.states);
  const condition = listCondition(shape, states);
  const order = shape.desc ? "ORDER BY id DESC" : "ORDER BY id";
  const byIndex = listIndex(shape.filters, states);
  if (byIndex === null) {
    return `SELECT * FROM jobs WHERE ${condition}\n    ${order} LIMIT :limit`;
  }
  // The ids of the page come from the index alone when no other filter needs
  // the row; only the page's rows are read in full.
  return `SELECT * FROM jobs WHERE id IN (
      SELECT id FROM jobs ${byIndex} WHERE ${condition}
      ${order} LIMIT :limit)
    ${order}`;
}

/**
 * The text of the `jobsCountMatching` statement of a shape: the condition
 * of the listing without its paging, counted from the same index; with
 * `atMost`, the count stops after `:atMost` rows.
 */
export function jobsCountSql(
  shape: Omit<ListShape, "desc" | "after"> & { atMost?: boolean },
): string {
  const states = shape.states === null ? null : knownStates(shape.states);
  const condition = listCondition({ ...shape, desc: false, after: false }, states);
  const byIndex = listIndex(shape.filters, states);
  // No condition at all lets SQLite count the smallest index instead of the rows.
  const where = condition === "true" ? "" : ` WHERE ${condition}`;
  if (shape.atMost) {
    return `SELECT count(*) AS count FROM (
      SELECT 1 FROM jobs ${byIndex ?? ""}${where} LIMIT :atMost)`;
  }
  return `SELECT count(*) AS count FROM jobs ${byIndex ?? ""}${where}`;
}

/** The WHERE condition of a listing: its filters, its states, its keyset bound. */
function listCondition(shape: ListShape, states: readonly JobState[] | null): string {
  const where: string[] = shape.filters.map((name) => LIST_FILTERS[name]);
  if (states !== null) {
    where.push(
      states.length === 0
        ? "false"
        : states.length === 1
        ? `state = '${states[0]}'`
        : `state IN (${states.map((s) => `'${s}'`).join(", ")})`,
    );
  }
  if (shape.after) where.push(shape.desc ? "id < :after" : "id > :after");
  return where.length === 0 ? "true" : where.join("\n      AND ");
}

/**
 * The index a listing names (`INDEXED BY`), "" to leave it to the planner
 * with a schedule filter, or null when it reads the table in id order.
 */
function listIndex(
  filters: readonly ListFilter[],
  states: readonly JobState[] | null,
): string | null {
  const index = states?.length === 1 ? LIST_INDEX[states[0]!] : undefined;
  return filters.includes("schedule")
    ? "" // the planner's own choice: jobs_schedule, by equality
    : index !== undefined && !filters.includes("ids") && !filters.includes("occurrence")
    ? `INDEXED BY ${index}`
    : null;
}

/** `states` in the order of JOB_STATES, each checked against it, without repeats. */
function knownStates(states: readonly string[]): JobState[] {
  for (const state of states) checkState(state);
  return JOB_STATES.filter((state) => states.includes(state));
}
