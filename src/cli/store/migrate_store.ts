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
 * A copy that succeeds retires its source in the same step: the source's
 * `store.moved` setting names the target (credentials removed) and an
 * audit row says who moved it, written in the source's transaction right
 * after the target's commits. From then on a daemon, `enqueue` or any write
 * on the source is refused, naming the new store (`--force-moved` writes
 * anyway, audited), and reads say it moved. `--reopen --db <old>` takes a
 * retired store back (audited).
 *
 * @module
 */

import type { Command } from "commander";
import {
  describeLocation,
  MOVED_SETTING,
  type OpenedStore,
  parseLocation,
  storeSchema,
} from "../../store/open.ts";
import { audit } from "../../admin/audit.ts";
import type { Store } from "../../store/store.ts";
import {
  storeTransfer,
  TransferMismatchError,
  type TransferOptions,
  TransferRefusedError,
  type TransferReport,
  TransferRetireError,
} from "../../store/transfer.ts";
import { escapeControl } from "../../text/escape.ts";
import { type CliDeps, CommandFailed, globalOptions, plural, quiet, who } from "../common.ts";
import { openFailure, openStore } from "./open.ts";
import { storeStateName } from "../state_dir.ts";
import { cell, commandLine, firstLine, table } from "../text.ts";

interface MigrateStoreOptions {
  from?: string;
  to?: string;
  dryRun?: boolean;
  json?: boolean;
  reopen?: boolean;
  db?: string;
  actor?: string;
  reason?: string;
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
        .option(
          "--from <location>",
          "the store to copy (a SQLite file or a postgres:// URL); stop its daemons first. " +
            "A copy that succeeds retires it: daemons and writes on it are then refused",
        )
        .option(
          "--to <location>",
          "the store to copy into, created and migrated when missing; it must hold no rows",
        )
        .option("--dry-run", "count what would be copied and check the refusals; write nothing")
        .option(
          "--reopen",
          "take back a store a copy retired (with --db): daemons and writes on it are allowed again",
        ),
      {
        db: {
          only: "with --reopen only: the retired store to take back " +
            "(--from and --to name the two stores of a copy)",
        },
        config: { not: "the stores are copied whole; the schedules file plays no part" },
        json: true,
        // The copy adds no row to the target's trail; the source's records its retirement.
        audit: { reason: "optional" },
      },
    ).action(async (options: MigrateStoreOptions) => {
      if (options.reopen) await reopenCommand(options, deps);
      else await migrateStoreCommand(options, deps);
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
  if (from === undefined || to === undefined) {
    throw new CommandFailed(
      `jobs migrate-store: ${
        from === undefined ? "--from" : "--to"
      } is required (the two stores: --from <location> --to <location>; or --reopen --db <location>)`,
      2,
    );
  }
  if (options.db !== undefined) {
    throw new CommandFailed(
      `jobs migrate-store: --db names only the store --reopen takes back; --from and --to name the two stores`,
      2,
    );
  }
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
  // Written to when the copy succeeds (its retirement), so it must be writable;
  // a source already retired is refused, naming where it went.
  const source = await openStore("migrate-store", from, options.dryRun ? "read" : "write", deps);
  let target: OpenedStore | null = null;
  try {
    let state: TargetState = { state: "ready" };
    if (options.dryRun) {
      state = await targetState(to, deps);
      if (state.state === "ready") target = await openStore("migrate-store", to, "read", deps);
    } else target = await openStore("migrate-store", to, "create", deps);
    const { actor, reason } = who(options, deps);
    const report = await transfer(source.store, target?.store ?? null, {
      now,
      dryRun: !!options.dryRun,
      // The new location as every message shows it: never with its password.
      retire: { to: describeLocation(to), actor, reason },
    });
    print(report, state, { ...options, from, to }, deps);
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
  options: TransferOptions,
): Promise<TransferReport> {
  try {
    return await storeTransfer(from, to, options);
  } catch (error) {
    if (error instanceof TransferRetireError) {
      // Loud: the copy is good, but the old store still takes daemons and writes.
      throw new CommandFailed(
        `jobs migrate-store: ${escapeControl(error.message)}; point every daemon at "${
          escapeControl(to?.location ?? "")
        }" and keep them all off "${escapeControl(from.location)}" (rename or remove it)`,
      );
    }
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
  options: MigrateStoreOptions & { from: string; to: string },
  deps: CliDeps,
): void {
  const from = describeLocation(options.from);
  const to = describeLocation(options.to);
  if (options.json) {
    // `retired`: the source now refuses daemons and writes (--reopen takes it back).
    deps.out(
      JSON.stringify({ from, to, ...report, ...(report.dryRun ? { target } : { retired: true }) }),
    );
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
  for (const line of nextSteps(options.from, options.to, deps)) deps.out(line);
}

/** What to do after a copy: where daemons go now, and that the source is retired. */
function nextSteps(from: string, to: string, deps: CliDeps): string[] {
  const target = describeLocation(to);
  const reopen = commandLine(deps.program, [
    "migrate-store",
    "--reopen",
    "--db",
    describeLocation(from),
  ]);
  return [
    `next: point every daemon and command at "${cell(target)}" (JOBS_DB=... or --db ..., ` +
    `with its password where it needs one);`,
    `  "${cell(describeLocation(from))}" is retired: daemons and writes on it are refused, ` +
    `reads say where it moved (${cell(reopen)} takes it back)`,
  ];
}

/** `jobs migrate-store --reopen --db <old>`: a retired store takes daemons and writes again (audited). */
async function reopenCommand(options: MigrateStoreOptions, deps: CliDeps): Promise<void> {
  if (options.from !== undefined || options.to !== undefined || options.dryRun) {
    throw new CommandFailed(
      `jobs migrate-store: --reopen takes back one store, named by --db; it copies nothing ` +
        `(no --from, --to or --dry-run)`,
      2,
    );
  }
  if (options.db === undefined) {
    throw new CommandFailed(
      `jobs migrate-store: --reopen needs --db <location>, the retired store`,
      2,
    );
  }
  const db = options.db;
  checkLocation("--db", db);
  const { actor, reason, now } = who(options, deps);
  // Opened for reading (a write mode would refuse it), then written in one transaction.
  const { store, moved } = await openStore("migrate-store --reopen", db, "read", {
    ...deps,
    err: () => {},
  });
  try {
    if (moved === null) {
      throw new CommandFailed(
        `jobs migrate-store --reopen: the store "${escapeControl(describeLocation(db))}" is not ` +
          `retired (no copy moved it); nothing to take back`,
      );
    }
    await store.transaction(async (tx) => {
      await tx.settingDelete({ key: MOVED_SETTING });
      await audit(tx, { actor, reason, now }, "store.reopened", "store", { movedTo: moved.to });
    }).catch((error) => {
      const message = firstLine(error instanceof Error ? error.message : String(error));
      throw new CommandFailed(
        `jobs migrate-store --reopen: the store "${
          escapeControl(describeLocation(db))
        }" could not be taken back, it is still retired: ${escapeControl(message)}`,
      );
    });
    if (options.json) {
      deps.out(JSON.stringify({ reopened: describeLocation(db), movedTo: moved.to }));
    } else {
      deps.out(
        `reopened "${cell(describeLocation(db))}": daemons and writes on it are allowed again; ` +
          `it had moved to "${cell(moved.to)}" on ${new Date(moved.at).toISOString()}, ` +
          `so keep daemons on one of the two only`,
      );
    }
  } finally {
    await store.close();
  }
}
