/**
 * `jobs pause | resume <queue>`: stops or restarts claiming from a queue for
 * every process on the store, audited. `jobs queues set <queue> --global N
 * --partition-limit N --rate 100/1m:10`: stores the queue's flow limits,
 * overriding the schedules file's on every node from its next claim,
 * audited. A queue nobody knows of (no
 * configuration declares it, no job or node uses it, no stored row has it)
 * is refused with the nearest known names, so a typo does not leave a
 * phantom queue behind; `--create` insists.
 *
 * @module
 */

import type { Command } from "commander";
import {
  flowText,
  limitsText,
  parseLimit,
  parseRate,
  type QueueLimitsChange,
  setQueueLimits,
  setQueuePaused,
} from "../admin/queues.ts";
import { InvalidArgumentError } from "commander";
import { nodesView } from "../admin/nodes.ts";
import { queuesView } from "../admin/queues.ts";
import type { Store } from "../store/store.ts";
import type { ScheduleConfig } from "../config/types.ts";
import { didYouMean } from "../text/suggest.ts";
import { type CliDeps, CommandFailed, dbPath, globalOptions, quiet, who } from "./common.ts";
import { configIfAny } from "./config.ts";
import { describeLocation } from "../store/open.ts";
import { withStore } from "./store/open.ts";
import { cell, echo } from "./text.ts";

interface QueueOptions {
  db?: string;
  config?: string;
  reason?: string;
  actor?: string;
  create?: boolean;
  json?: boolean;
}

/**
 * An option's value parsed by `parse`, or commander's error naming the
 * value; `none` stays the word (commander keeps no null an option parses to).
 */
function parsed<T>(
  parse: (text: string) => { ok: true; value: T | null } | { ok: false; reason: string },
): (text: string) => T | "none" {
  return (text) => {
    const r = parse(text);
    if (!r.ok) throw new InvalidArgumentError(`"${echo(text)}" ${r.reason}`);
    return r.value ?? "none";
  };
}

/** An option's parsed value as a change: `none` removes the stored limit (null). */
function orNone<T>(value: T | "none"): T | null {
  return value === "none" ? null : value;
}

interface LimitsOptions extends QueueOptions {
  global?: number | "none";
  partitionLimit?: number | "none";
  rate?: NonNullable<QueueLimitsChange["rate"]> | "none";
}

/** Registers `pause`, `resume` and `queues set` on the program. */
export function registerQueueCommands(program: Command, deps: CliDeps): void {
  const group = quiet(
    globalOptions(
      program.command("queues")
        .description(
          "each queue's flow limits: declared in the file, and stored (overriding the file's)",
        )
        // `--json` and `--reason` after `set` are the subcommand's.
        .enablePositionalOptions(),
      {
        db: { mode: "read" },
        config: { for: "for the limits it declares (read when it exists)" },
        json: true,
        audit: { not: "it only reads: nothing to audit" },
      },
    ).action(async (options: { db?: string; config?: string; json?: boolean }) => {
      const loaded = await configIfAny("queues", options.config, deps, { lenient: true });
      await withStore("queues", dbPath(options.db, deps), "read", deps, async (store) => {
        const stored = new Map((await store.queueLimitsList()).map((r) => [r.name, r]));
        const declared = loaded.config?.queues ?? {};
        const names = [...new Set([...Object.keys(declared), ...stored.keys()])].sort();
        const rows = names.map((name) => {
          const row = stored.get(name);
          return {
            queue: name,
            declared: declared[name]?.flow ?? null,
            stored: row
              ? { global: row.global, partitionLimit: row.partitionLimit, rate: row.rate }
              : null,
          };
        });
        if (options.json) {
          deps.out(JSON.stringify(rows));
          return;
        }
        if (rows.length === 0) deps.out("no queue declares or stores flow limits");
        for (const r of rows) {
          deps.out(
            `${cell(r.queue)}: file ${r.declared ? flowText(r.declared) : "none"}; stored ${
              r.stored ? limitsText(r.stored) : "none"
            }`,
          );
        }
      });
    }),
    deps,
    "queues",
  );
  quiet(
    globalOptions(
      group.command("set")
        .description(
          "store a queue's flow limits for every node (audited); each overrides the file's",
        )
        .argument("<queue>", "the queue")
        .option(
          "--global <n>",
          "at most n executing across every node (none: remove)",
          parsed(parseLimit),
        )
        .option(
          "--partition-limit <n>",
          "at most n executing per partition key (none: remove)",
          parsed(parseLimit),
        )
        .option(
          "--rate <limit/period[:burst]>",
          "at most limit starts per period across every node, e.g. 100/1m:10 (none: remove)",
          parsed(parseRate),
        )
        .option("--create", "set the limits of a queue no configuration, job or node knows of yet"),
      {
        db: { mode: "write" },
        config: { for: "for the queues it declares (read when it exists)" },
        json: true,
        audit: { reason: "optional" },
      },
    ).action(async (queue: string, options: LimitsOptions) => {
      await limitsCommand(queue, options, deps);
    }),
    deps,
    "queues set",
  );
  for (const paused of [true, false]) {
    const name = paused ? "pause" : "resume";
    quiet(
      globalOptions(
        program.command(name)
          .description(`${name} a queue for every process on the store (audited)`)
          .argument("<queue>", "the queue")
          .option("--create", `${name} a queue no configuration, job or node knows of yet`),
        {
          db: { mode: "write" },
          config: { for: "for the queues it declares (read when it exists)" },
          json: true,
          audit: { reason: "optional" },
        },
      ).action(async (queue: string, options: QueueOptions) => {
        await queueCommand(name, queue, paused, options, deps);
      }),
      deps,
      name,
    );
  }
}

async function queueCommand(
  name: string,
  queue: string,
  paused: boolean,
  options: QueueOptions,
  deps: CliDeps,
): Promise<void> {
  const db = dbPath(options.db, deps);
  const loaded = await configIfAny(name, options.config, deps, { lenient: true });
  const file = loaded.file;
  await withStore(name, db, "write", deps, async (store) => {
    if (!options.create) {
      const known = await knownQueues(store, loaded.config, deps.clock.now());
      if (!known.includes(queue)) {
        throw new CommandFailed(
          `jobs ${name}: no queue "${echo(queue)}" is declared in ${echo(file)}, used by a job ` +
            `or served by a node (--create ${name}s it anyway)${echo(didYouMean(queue, known))}`,
        );
      }
    }
    const r = await setQueuePaused(store, queue, paused, who(options, deps));
    if (options.json) {
      const shown = describeLocation(db);
      deps.out(JSON.stringify({ queue: r.queue, paused: r.paused, was: r.was, db: shown }));
      return;
    }
    const text = cell(r.queue);
    const where = cell(describeLocation(db));
    deps.out(
      r.was === r.paused
        ? `queue ${text} was already ${r.paused ? "paused" : "running"}; recorded`
        : `queue ${text} ${r.paused ? "paused" : "resumed"} for every process on ${where}`,
    );
  });
}

/**
 * Every queue anyone knows of: declared in the file (its queues and its
 * schedules' queues), holding jobs, stored (paused or resumed before), or
 * served by a node.
 */
async function knownQueues(
  store: Store,
  config: ScheduleConfig | null,
  now: number,
): Promise<string[]> {
  return (await queuesView(store, config, await nodesView(store, now))).map((q) => q.name);
}

async function limitsCommand(queue: string, options: LimitsOptions, deps: CliDeps): Promise<void> {
  const change: QueueLimitsChange = {};
  if (options.global !== undefined) change.global = orNone(options.global);
  if (options.partitionLimit !== undefined) {
    change.partitionLimit = orNone(options.partitionLimit);
  }
  if (options.rate !== undefined) change.rate = orNone(options.rate);
  if (Object.keys(change).length === 0) {
    throw new CommandFailed(
      "jobs queues set: give --global, --partition-limit or --rate (a number, or none)",
      2,
    );
  }
  const db = dbPath(options.db, deps);
  const loaded = await configIfAny("queues set", options.config, deps, { lenient: true });
  await withStore("queues set", db, "write", deps, async (store) => {
    if (!options.create) {
      const known = await knownQueues(store, loaded.config, deps.clock.now());
      if (!known.includes(queue)) {
        throw new CommandFailed(
          `jobs queues set: no queue "${echo(queue)}" is declared in ${echo(loaded.file)}, used ` +
            `by a job or served by a node (--create sets it anyway)${
              echo(didYouMean(queue, known))
            }`,
        );
      }
    }
    const r = await setQueueLimits(store, queue, change, who(options, deps));
    if (options.json) {
      deps.out(JSON.stringify({ queue: r.queue, was: r.was, limits: r.limits }));
      return;
    }
    deps.out(
      `queue ${cell(r.queue)}: ${limitsText(r.limits)}, for every node on ${
        cell(describeLocation(db))
      } from its next claim (was: ${limitsText(r.was)})`,
    );
  });
}
