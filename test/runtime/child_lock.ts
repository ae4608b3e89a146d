/**
 * Child process for the store-outage tests: opens the SQLite file given as
 * the first argument, takes its write lock with `BEGIN EXCLUSIVE`, prints
 * `locked`, holds the lock until its stdin ends, then commits and prints
 * `released`. The parent decides how long, by closing the child's stdin.
 */

import { DatabaseSync } from "node:sqlite";

const path = Deno.args[0];
if (!path) throw new Error("usage: child_lock.ts <sqlite file>");
const db = new DatabaseSync(path);
// The daemon may hold the lock for a moment when we ask: wait for it.
db.exec("PRAGMA busy_timeout = 10000");
db.exec("BEGIN EXCLUSIVE");
console.log("locked");
for await (const _chunk of Deno.stdin.readable) {
  // Any input, or the end of it, releases the lock.
  break;
}
db.exec("COMMIT");
db.close();
console.log("released");
