/**
 * A PostgreSQL location for tests that hand the store to another process
 * (`jobs daemon --db`, `jobs ls --db`): a fresh schema name, created by
 * whoever opens it first in `create` mode, and dropped on dispose whether
 * or not anything created it.
 */

import { dropTestSchema, POSTGRES_TEST_URL, testSchema } from "./backends.ts";

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
    [Symbol.asyncDispose]: () => dropTestSchema(schema),
  };
}
