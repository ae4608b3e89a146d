/**
 * A PostgreSQL location for tests that hand the store to another process
 * (`jobs daemon --db`, `jobs ls --db`): a fresh schema name, created by
 * whoever opens it first in `create` mode, and dropped on dispose whether
 * or not anything created it.
 */

import { openPostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { POSTGRES_TEST_URL, testSchema } from "./backends.ts";

/** A fresh schema of the test database, as a location; dropped on dispose. */
export interface PostgresLocation {
  /** `postgres://...?schema=<schema>`: what `--db` and `openJobs` take. */
  url: string;
  schema: string;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A location in a schema no other test uses (nothing is created until something opens it). */
export function postgresLocation(): PostgresLocation {
  const schema = testSchema();
  const url = `${POSTGRES_TEST_URL}?schema=${schema}`;
  return {
    url,
    schema,
    async [Symbol.asyncDispose]() {
      // `public`, which exists: the store's own schema may never have been created.
      const store = await openPostgresStore(POSTGRES_TEST_URL, { migrate: false, max: 1 });
      try {
        await store.transaction((tx) => tx.sql`DROP SCHEMA IF EXISTS ${tx.sql(schema)} CASCADE`);
      } finally {
        await store.close();
      }
    },
  };
}
