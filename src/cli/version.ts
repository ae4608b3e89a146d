/**
 * `jobs version`: the program's version and the runtime it runs on.
 *
 * @module
 */

import config from "../../deno.json" with { type: "json" };

/** `jobs 0.1.0 (deno 2.9.6)`. */
export function versionLine(): string {
  return `jobs ${config.version} (deno ${Deno.version.deno})`;
}
