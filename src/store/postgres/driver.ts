/**
 * postgres.js 3.4.9, from the patched copy in `vendor/postgres-3.4.9/`
 * (see its README): the one place the PostgreSQL store and its tools import
 * the driver from. Released 3.4.9 loses a pooled connection for good when
 * a session ends while a small write waits (porsager/postgres#1066, #1154,
 * #1208): the next session's startup message is never sent (a
 * CONNECT_TIMEOUT after every `pg_terminate_backend` or server restart),
 * or the late write throws from a timer and ends the process. No release
 * fixes it yet; the copy carries a three-line fix, and the rest is 3.4.9
 * as published, its Node built-ins imported as `node:`.
 *
 * @module
 */

// @ts-types="../../../vendor/postgres-3.4.9/types/index.d.ts"
import postgres from "../../../vendor/postgres-3.4.9/src/index.js";

export default postgres;
