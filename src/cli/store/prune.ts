/**
 * `jobs prune`: deletes old final jobs and their attempts now, as the
 * daemon's pruner does (schedules with a retention of their own keep to
 * it), or with `--dry-run` only counts them. Audited.
 *
 * @module
 */

import type { Command } from "commander";
import { pruneNow, type Retention } from "../../admin/store.ts";
import { formatDuration } from "../../text/durations.ts";
import { DEFAULT_RETENTION } from "../../runtime/pruner.ts";
import {
  type CliDeps,
  dbPath,
  globalOptions,
  parseDuration,
  plural,
  quiet,
  who,
} from "../common.ts";
import { configIfAny } from "../config.ts";
import { withStore } from "./open.ts";

interface PruneOptions {
  completed?: number;
  cancelled?: number;
  discarded?: number;
  dryRun?: boolean;
  reason?: string;
  actor?: string;
  config?: string;
  db?: string;
  json?: boolean;
}

/** Registers `jobs prune` on the program. */
export function registerPruneCommand(program: Command, deps: CliDeps): void {
  const keep = (state: keyof typeof DEFAULT_RETENTION) =>
    `keep ${state} jobs this long (default: the file's pruner.retention, else ${
      formatDuration(DEFAULT_RETENTION[state])
    })`;
  quiet(
    globalOptions(
      program.command("prune")
        .description("delete old final jobs and their attempts now, as the daemon's pruner does")
        .option("--completed <duration>", keep("completed"), parseDuration)
        .option("--cancelled <duration>", keep("cancelled"), parseDuration)
        .option("--discarded <duration>", keep("discarded"), parseDuration)
        .option("--dry-run", "count what would be deleted; delete nothing"),
      {
        db: { mode: "write" },
        config: { for: "for schedules with a retention of their own (read when it exists)" },
        json: true,
        audit: { reason: "optional" },
      },
    ).action(async (options: PruneOptions) => {
      await pruneCommand(options, deps);
    }),
    deps,
    "prune",
  );
}

async function pruneCommand(options: PruneOptions, deps: CliDeps): Promise<void> {
  // Not lenient: without the file's own retentions, a prune could delete
  // occurrences a schedule keeps longer (or jobs its `pruner:` keeps longer).
  const { config } = await configIfAny("prune", options.config, deps);
  const retention: Retention = { ...config?.pruner?.retention };
  if (options.completed !== undefined) retention.completed = options.completed;
  if (options.cancelled !== undefined) retention.cancelled = options.cancelled;
  if (options.discarded !== undefined) retention.discarded = options.discarded;
  const schedules = (config?.schedules ?? [])
    .filter((s) => s.retentionMs !== undefined)
    .map((s) => ({ id: s.id, retentionMs: s.retentionMs! }));
  await withStore("prune", dbPath(options.db, deps), "write", deps, async (store) => {
    const result = await pruneNow(store, who(options, deps), {
      retention,
      schedules,
      dryRun: !!options.dryRun,
    });
    const kept = { ...DEFAULT_RETENTION, ...retention };
    if (options.json) {
      deps.out(JSON.stringify({ ...result, retentionMs: kept, schedules }));
      return;
    }
    const rules = `completed older than ${formatDuration(kept.completed)}, cancelled older ` +
      `than ${formatDuration(kept.cancelled)}, discarded older than ${
        formatDuration(kept.discarded)
      }`;
    const own = schedules.length > 0
      ? `; ${plural(schedules.length, "schedule")} kept to their own retention`
      : "";
    deps.out(
      `${result.dryRun ? "would delete" : "deleted"} ${plural(result.deleted, "job")} ` +
        `(${rules}${own})`,
    );
  });
}
