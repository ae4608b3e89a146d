/**
 * The database drivers for code outside the store that reads a database of
 * its own (an ingest pipeline's query sources): loaded on first use, so a
 * program that never opens one never loads it.
 *
 * @module
 */

import type postgres from "./postgres/driver.ts";

/** The vendored postgres.js, the PostgreSQL store's own driver. */
export async function postgresDriver(): Promise<typeof postgres> {
  return (await import("./postgres/driver.ts")).default;
}
