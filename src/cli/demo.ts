/**
 * `jobs demo`: a tour of the library on a SQLite file. The example itself is
 * chosen by main.ts (`CliDeps.demo`), so `src/` holds no example code.
 *
 * @module
 */

import type { Command } from "commander";
import { type CliDeps, dbPath, globalOptions, quiet } from "./common.ts";

/** Registers `jobs demo` on the program. */
export function registerDemoCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("demo")
        .description("enqueue and work example jobs on a SQLite file, then print what happened"),
      {
        db: { mode: "create" },
        config: { not: "it runs its own example jobs, not a schedules file" },
        json: { not: "it prints a tour for a person to read" },
        audit: { not: "its writes are the example's own, not an operator's" },
      },
    ).action(async (options: { db?: string }) => {
      await deps.demo({ db: dbPath(options.db, deps) });
    }),
    deps,
    "demo",
  );
}
