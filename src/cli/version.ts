/**
 * `jobs version` (and `--version`, `-V`): the program's version and the
 * runtime it runs on.
 *
 * @module
 */

import type { Command } from "commander";
import config from "../../deno.json" with { type: "json" };
import { type CliDeps, quiet } from "./common.ts";

/** `jobs 0.1.0 (deno 2.9.6)`. */
export function versionLine(): string {
  return `jobs ${config.version} (deno ${Deno.version.deno})`;
}

/** Registers `jobs version` on the program (`--version` is the program's own option). */
export function registerVersionCommand(program: Command, deps: CliDeps): void {
  quiet(
    program.command("version")
      .description("print the version (the same line as --version)")
      .action(() => deps.out(versionLine())),
    deps,
    "version",
  );
}
