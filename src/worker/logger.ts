/**
 * Events the runtime reports: one name and a few fields, redacted before
 * they are written anywhere.
 *
 * @module
 */

import { redact } from "../kernel/redact.ts";

/** Receives runtime events (`job.lease_lost`, `store.error`, `plugin.error`, ...). */
export type Logger = (event: string, fields: Record<string, unknown>) => void;

/** Drops every event: for tests and benchmarks. */
export const silentLogger: Logger = () => {};

/** Writes each event as one JSON line to stderr, redacted. */
export const jsonLogger: Logger = (event, fields) => {
  console.error(redact(JSON.stringify({ event, ...fields })));
};
