/**
 * What `jobs users` and `jobs tokens` share: the group command that only
 * names its subcommands, a refusal of the doors as the command's failure,
 * and how a principal's roles, tenant and instants are written.
 *
 * @module
 */

import type { Command } from "commander";
import { PrincipalRefused } from "../admin/roles.ts";
import type { PrincipalRow } from "../store/store.ts";
import { didYouMean } from "../text/suggest.ts";
import { type CliDeps, CommandFailed, globalOptions, quiet } from "./common.ts";
import { cell, echo, iso } from "./text.ts";

/**
 * The group command `name` (`users`, `tokens`), whose subcommands do the
 * work: alone, or with an unknown subcommand, it fails naming them.
 */
export function principalGroup(
  program: Command,
  deps: CliDeps,
  name: string,
  description: string,
  subcommands: readonly string[],
): Command {
  const taken = `taken by each of its commands: ${subcommands.join(", ")}`;
  return quiet(
    globalOptions(
      program.command(name)
        .description(description)
        .argument("[command]", subcommands.join(", ")),
      {
        db: { not: taken },
        config: { not: taken },
        json: { not: taken },
        audit: { not: taken },
      },
    ).action((sub: string | undefined) => {
      const help = `run "${deps.program} help ${name}" for its commands`;
      throw new CommandFailed(
        sub === undefined
          ? `jobs ${name}: name a command: ${subcommands.join(", ")} (${help})`
          : `jobs ${name}: unknown command "${echo(sub)}"${
            echo(didYouMean(sub, subcommands))
          } (${help})`,
        2,
      );
    }),
    deps,
    name,
  );
}

/**
 * A refusal of the doors as the command's failure: exit 2 when the command
 * line is wrong (a role, a name, a tenant, nothing to change), 1 when it
 * met the store as it is (the name taken or unknown, the password).
 */
export function refused(command: string, error: unknown): never {
  if (error instanceof PrincipalRefused) {
    const ran = error.why === "exists" || error.why === "missing" || error.why === "bad-password";
    throw new CommandFailed(`jobs ${command}: ${echo(error.message, 400)}`, ran ? 1 : 2);
  }
  throw error;
}

/** Runs `fn`, a refusal of the doors failing the command (see {@linkcode refused}). */
export async function orRefused<T>(command: string, fn: () => Promise<T> | T): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    return refused(command, error);
  }
}

/** `admin, viewer`. */
export function rolesText(row: PrincipalRow): string {
  return row.roles.map(cell).join(", ");
}

/** `tenant acme`, or `installation-wide`. */
export function scopeText(row: PrincipalRow): string {
  return row.tenant === null ? "installation-wide" : `tenant ${cell(row.tenant)}`;
}

/** An instant for a table: ISO UTC, or `what` (`never`, `-`). */
export function when(ms: number | null, what: string): string {
  return ms === null ? what : iso(ms)!;
}
