/**
 * `jobs migrate`: applies the pending schema migrations to the store
 * (creating it when missing), audited when any was applied; `--dry-run`
 * lists them through a read-only connection and writes nothing.
 *
 * One of the three commands that may create the store.
 *
 * @module
 */

import type { Command } from "commander";
import { audit } from "../../admin/audit.ts";
import { type CliDeps, dbPath, globalOptions, quiet, who } from "../common.ts";
import { describeLocation } from "../../store/open.ts";
import { exists } from "../../text/files.ts";
import { openStore, pendingFor } from "./open.ts";
import { cell } from "../text.ts";

interface MigrateOptions {
  dryRun?: boolean;
  reason?: string;
  actor?: string;
  db?: string;
  json?: boolean;
}

/** Registers `jobs migrate` on the program. */
export function registerMigrateCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("migrate")
        .description("apply pending schema migrations to the store (creating it when missing)")
        .option("--dry-run", "list the pending migrations; write nothing"),
      {
        db: { mode: "create" },
        config: { not: "the schema is the program's own; the file plays no part" },
        json: true,
        audit: { reason: "optional" },
      },
    ).action(async (options: MigrateOptions) => {
      await migrateCommand(options, deps);
    }),
    deps,
    "migrate",
  );
}

async function migrateCommand(options: MigrateOptions, deps: CliDeps): Promise<void> {
  const db = dbPath(options.db, deps);
  const result = options.dryRun ? await pendingFor(db, deps) : await migrate(db, options, deps);
  if (options.json) {
    deps.out(JSON.stringify({ db: describeLocation(db), dryRun: !!options.dryRun, ...result }));
    return;
  }
  const names = result.migrations.map((m) => `${m.version} (${m.name})`).join(", ");
  const at = `version ${result.version}`;
  const where = cell(describeLocation(db));
  deps.out(
    options.dryRun
      ? result.migrations.length === 0
        ? `${where} is at ${at}, the latest; nothing pending`
        : `${where} is at ${at}${result.exists ? "" : " (no file yet)"}; ` +
          `pending: ${names}; nothing written`
      : result.migrations.length === 0
      ? `${where} is at ${at}, the latest; nothing to apply`
      : `applied ${names}; ${where} is now at ${at}`,
  );
}

/** Applies the pending migrations; audited (`store.migrate`) when any was applied. */
async function migrate(db: string, options: MigrateOptions, deps: CliDeps) {
  const existed = await exists(db);
  const { store, schema, applied } = await openStore("migrate", db, "create", deps);
  try {
    if (applied.length > 0) {
      await audit(store, who(options, deps), "store.migrate", "store", {
        applied: applied.map((m) => m.version),
        version: schema.version,
      });
    }
    return { exists: existed, version: schema.version, migrations: applied };
  } finally {
    await store.close();
  }
}
