/**
 * `jobs pause | resume <queue>`: stops or restarts claiming from a queue for
 * every process on the store, audited. A queue nobody knows of (no
 * configuration declares it, no job or node uses it, no stored row has it)
 * is refused with the nearest known names, so a typo does not leave a
 * phantom queue behind; `--create` insists.
 *
 * @module
 */

import type { Command } from "commander";
import { setQueuePaused } from "../admin/queues.ts";
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

/** Registers `pause` and `resume` on the program. */
export function registerQueueCommands(program: Command, deps: CliDeps): void {
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
