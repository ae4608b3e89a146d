/**
 * Child of daemon_open_test.ts, run as an unprivileged user: opens (and
 * migrates) the store at `Deno.args[0]` and prints one JSON line, either
 * `{ "opened": true }` or `{ "error": name, "message": message }`.
 */

import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";

try {
  const store = await openSqliteStore(Deno.args[0]!);
  await store.close();
  console.log(JSON.stringify({ opened: true }));
} catch (error) {
  const e = error instanceof Error ? error : new Error(String(error));
  console.log(JSON.stringify({ error: e.name, message: e.message }));
}
