/**
 * A set of named statements prepared on first use on the store's
 * connection, and forgotten when the connection closes: what the store's
 * workflow, ingest and report parts each keep.
 *
 * @module
 */

import type { DatabaseSync, StatementSync } from "node:sqlite";

/** The statements of `sql`, by name, on one connection. */
export class Prepared<K extends string> {
  #s: Record<K, StatementSync> | null = null;

  constructor(
    /** The connection (a function: the store opens it after building its parts). */
    readonly connection: () => DatabaseSync,
    readonly sql: Readonly<Record<K, string>>,
  ) {}

  /** The statements, prepared at the first call after a (re)open. */
  get q(): Record<K, StatementSync> {
    return this.#s ??= Object.fromEntries(
      Object.entries(this.sql).map(([k, sql]) => [k, this.connection().prepare(sql as string)]),
    ) as Record<K, StatementSync>;
  }

  /** Forgets the prepared statements (the connection closed). */
  reset(): void {
    this.#s = null;
  }
}
