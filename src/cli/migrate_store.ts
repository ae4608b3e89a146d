/**
 * `jobs migrate-store --from ./jobs.db --to postgres://...`: copies a whole
 * store into an empty one (SQLite to PostgreSQL, or back) with its ids,
 * fences, occurrence identities, unique keys and schedules' recovery points,
 * then prints each table's row count and checksum on both sides. The copy
 * itself is `src/store/transfer.ts`; this command opens the two stores
 * (the source read only at the current schema, the target created and
 * migrated) and says what happened.
 *
 * `--dry-run` counts what would be copied and checks the refusals (daemons
 * still running on the source, a target holding rows) without writing to
 * either store: a target that is missing or behind stays as it is.
 *
 * @module
 */

import type { Command } from "commander";
import { describeLocation, type OpenedStore, parseLocation, storeSchema } from "../store/open.ts";
import type { Store } from "../store/store.ts";
import {
  storeTransfer,
  TransferMismatchError,
  TransferRefusedError,
  type TransferReport,
} from "../store/transfer.ts";
import { escapeControl } from "../text/escape.ts";
import { type CliDeps, CommandFailed, globalOptions, plural, quiet } from "./common.ts";
import { openFailure, openStore } from "./open_store.ts";
import { storeStateName } from "./state_dir.ts";
import { cell, firstLine, table } from "./text.ts";

interface MigrateStoreOptions {
  from: string;
  to: string;
  dryRun?: boolean;
  json?: boolean;
}

/** Registers `jobs migrate-store` on the program. */
export function registerMigrateStoreCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("migrate-store")
        .description(
          "copy a whole store into an empty one (SQLite to PostgreSQL, or back), " +
            "ids and recovery points kept, counts and checksums compared",
        )
        .requiredOption(
          "--from <location>",
          "the store to copy (a SQLite file or a postgres:// URL), read only; stop its daemons first",
        )
        .requiredOption(
          "--to <location>",
          "the store to copy into, created and migrated when missing; it must hold no rows",
        )
        .option("--dry-run", "count what would be copied and check the refusals; write nothing"),
      {
        db: { not: "--from and --to name the two stores" },
        config: { not: "the stores are copied whole; the schedules file plays no part" },
        json: true,
        audit: { not: "the audit trail is copied as it is; the copy adds nothing to it" },
      },
    ).action(async (options: MigrateStoreOptions) => {
      await migrateStoreCommand(options, deps);
    }),
    deps,
    "migrate-store",
  );
}

/** Where the target stands on a dry run, which neither creates nor migrates it. */
type TargetState =
  | { state: "ready" }
  | { state: "create" }
  | { state: "migrate"; version: number; known: number };

async function migrateStoreCommand(options: MigrateStoreOptions, deps: CliDeps): Promise<void> {
  const { from, to } = options;
  checkLocation("--from", from);
  checkLocation("--to", to);
  if (await sameStore(from, to)) {
    throw new CommandFailed(
      `jobs migrate-store: --from and --to name the same store "${
        escapeControl(describeLocation(from))
      }"`,
      2,
    );
  }
  const now = deps.clock.now();
  const source = await openStore("migrate-store", from, "read", deps);
  let target: OpenedStore | null = null;
  try {
    let state: TargetState = { state: "ready" };
    if (options.dryRun) {
      state = await targetState(to, deps);
      if (state.state === "ready") target = await openStore("migrate-store", to, "read", deps);
    } else target = await openStore("migrate-store", to, "create", deps);
    const report = await transfer(source.store, target?.store ?? null, {
      now,
      dryRun: !!options.dryRun,
    });
    print(report, state, options, deps);
  } finally {
    await target?.store.close();
    await source.store.close();
  }
}

/** A location `parseLocation` refuses (a bad `?schema=`) fails naming the flag. */
function checkLocation(flag: string, location: string): void {
  try {
    parseLocation(location);
  } catch (error) {
    throw new CommandFailed(`jobs migrate-store: ${flag}: ${(error as Error).message}`, 2);
  }
}

/** Whether two locations name one store: one file (through its links), or one server, database and schema. */
async function sameStore(a: string, b: string): Promise<boolean> {
  const [pa, pb] = [parseLocation(a), parseLocation(b)];
  if (pa.kind === "sqlite" && pb.kind === "sqlite") {
    return await realPath(pa.path) === await realPath(pb.path);
  }
  if (pa.kind === "postgres" && pb.kind === "postgres") {
    return storeStateName(a) === storeStateName(b);
  }
  return false;
}

async function realPath(path: string): Promise<string> {
  try {
    return await Deno.realPath(path);
  } catch {
    return path;
  }
}

/** The target's schema, read without writing (a dry run creates and migrates nothing). */
async function targetState(to: string, deps: CliDeps): Promise<TargetState> {
  try {
    const { exists, version, pending } = await storeSchema(to);
    if (!exists || version === 0) return { state: "create" };
    if (pending.length > 0) return { state: "migrate", version, known: pending.at(-1)!.version };
    return { state: "ready" };
  } catch (error) {
    throw new CommandFailed(`jobs migrate-store: ${openFailure(to, error, deps.program)}`);
  }
}

async function transfer(
  from: Store,
  to: Store | null,
  options: { now: number; dryRun: boolean },
): Promise<TransferReport> {
  try {
    return await storeTransfer(from, to, options);
  } catch (error) {
    if (error instanceof TransferRefusedError || error instanceof TransferMismatchError) {
      throw new CommandFailed(`jobs migrate-store: ${error.message}`);
    }
    // A statement that failed (a row the target refuses, a lost connection):
    // the target's transaction was rolled back.
    const message = firstLine(error instanceof Error ? error.message : String(error));
    throw new CommandFailed(
      `jobs migrate-store: copying "${escapeControl(from.location)}" to "${
        escapeControl(to?.location ?? "")
      }" failed, nothing was written: ${escapeControl(message)}`,
    );
  }
}

/** How many hex digits of a checksum the table shows (the JSON has them all). */
const SHOWN_DIGITS = 16;

function print(
  report: TransferReport,
  target: TargetState,
  options: MigrateStoreOptions,
  deps: CliDeps,
): void {
  const from = describeLocation(options.from);
  const to = describeLocation(options.to);
  if (options.json) {
    deps.out(JSON.stringify({ from, to, ...report, ...(report.dryRun ? { target } : {}) }));
    return;
  }
  if (report.dryRun) {
    deps.out(`would copy "${cell(from)}" to "${cell(to)}" (dry run, nothing written):`);
    for (
      const line of table([["table", "rows"], ...report.tables.map((t) => [t.table, `${t.rows}`])])
    ) {
      deps.out(`  ${line}`);
    }
    deps.out(
      target.state === "create"
        ? "the target would be created at the current schema"
        : target.state === "migrate"
        ? `the target would be migrated from schema version ${target.version} to ${target.known}`
        : "the target is at the current schema and empty",
    );
    return;
  }
  deps.out(`copied "${cell(from)}" to "${cell(to)}":`);
  const short = (checksum: string | null) => (checksum ?? "-").slice(0, SHOWN_DIGITS);
  const rows = report.tables.map((t) => [
    t.table,
    `${t.rows}`,
    short(t.checksum),
    `${t.targetRows}`,
    short(t.targetChecksum),
    t.rows === t.targetRows && t.checksum === t.targetChecksum ? "equal" : "DIFFERENT",
  ]);
  const header = ["table", "rows", "checksum", "copied", "checksum", ""];
  for (const line of table([header, ...rows])) deps.out(`  ${line}`);
  const total = report.tables.reduce((n, t) => n + t.rows, 0);
  deps.out(
    `${plural(total, "row")}, every count and checksum equal; the next job id is ` +
      `${report.nextIds!.jobs}, the next audit id ${report.nextIds!.audit}`,
  );
}
