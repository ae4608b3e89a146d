/**
 * Failed bearer attempts counted per source address: the limiter of
 * `src/admin/failures.ts`, which person sign-in shares (per name).
 *
 * @module
 */

export { FailureLimiter, type FailureLimitOptions } from "../admin/failures.ts";
