/**
 * `jobs console`: where to open the web console (served by `jobs daemon` on
 * its listener, `src/console/`). It prints the daemon's stored public URL
 * (`daemon.public_url`, see `src/admin/public_url.ts`) when one is stored,
 * else the default listen address, and, while no person exists in the
 * store, how to add the first admin: the console has no anonymous access.
 *
 * @module
 */

import type { Command } from "commander";
import { readPublicUrl } from "../admin/public_url.ts";
import { type CliDeps, dbPath, globalOptions, quiet } from "./common.ts";
import { withStore } from "./store/open.ts";
import { commandLine } from "./text.ts";

/** Where the console is when no public URL is stored: the daemon's default listen address. */
export const DEFAULT_CONSOLE_URL = "http://127.0.0.1:9464/";

/** Registers `console` on the program. */
export function registerConsoleCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("console").description(
        "print the web console's address (served by jobs daemon) and how to sign in",
      ),
      {
        db: { mode: "read" },
        config: { not: "the console's address is the daemon's, stored in the store" },
        json: true,
        audit: { not: "it only reads: nothing to audit" },
      },
    ).action(async (options: { db?: string; json?: boolean }) => {
      await withStore("console", dbPath(options.db, deps), "read", deps, async (store) => {
        const stored = await readPublicUrl(store);
        const url = stored === null ? DEFAULT_CONSOLE_URL : `${stored.url}/`;
        const people = await store.principalsList({ kind: "person", limit: 1 });
        if (options.json) {
          deps.out(JSON.stringify({ url, people: people.length > 0 }));
          return;
        }
        deps.out(url);
        if (stored === null) {
          deps.out(
            `no daemon has stored its address yet: this is the default of ${
              commandLine(deps.program, ["daemon"])
            } (--listen changes it)`,
          );
        }
        if (people.length === 0) {
          deps.out(
            `nobody can sign in yet: ${
              commandLine(deps.program, ["users", "add"])
            } <name> --role admin adds the first admin (the password is asked twice)`,
          );
        }
      });
    }),
    deps,
    "console",
  );
}
