/**
 * `jobs work add|ls|next|claim|release|skip|reassign|do`: the items of the
 * work queues the schedules file declares, at the command line. `--as
 * <person>` names who works (a person the store knows, with their roles and
 * tenant); each change is audited with that person, the door `cli` and the
 * OS user behind the command. `add` without `--as` is the host's own (the
 * root of trust), recorded as `--actor` or the OS user.
 *
 * @module
 */

import type { Command } from "commander";
import {
  addWorkItem,
  claimWorkItem,
  doWorkItem,
  listWorkItems,
  nextWorkItem,
  reassignWorkItem,
  releaseWorkItem,
  rescoreWorkQueue,
  skipWorkItem,
  type WorkActor,
  workActor,
  workItemDetail,
  workQueue,
  WorkRefused,
} from "../admin/work.ts";
import type { Store } from "../store/store.ts";
import type { WorkItemView } from "../workqueue/items.ts";
import type { WorkQueueDefinition } from "../workqueue/types.ts";
import {
  type CliDeps,
  CommandFailed,
  configPath,
  dbPath,
  globalOptions,
  parseDuration,
  parseJson,
  parseReason,
  quiet,
  who,
  wholeNumber,
} from "./common.ts";
import { requireConfig } from "./config.ts";
import { principalGroup } from "./principals.ts";
import { withStore } from "./store/open.ts";
import { cell, echo, safeJson, table } from "./text.ts";

const SUBCOMMANDS = [
  "add",
  "ls",
  "show",
  "next",
  "claim",
  "release",
  "skip",
  "reassign",
  "do",
  "rescore",
] as const;

interface WorkOptions {
  db?: string;
  config?: string;
  json?: boolean;
  as?: string;
  actor?: string;
  reason?: string;
}

/** Registers `work` and its commands on the program. */
export function registerWorkCommands(program: Command, deps: CliDeps): void {
  const group = principalGroup(
    program,
    deps,
    "work",
    "the items of the work queues people clear: add, ls, show, next, claim, release, skip, " +
      "reassign, do (audited)",
    SUBCOMMANDS,
  );
  addCommand(group, deps);
  lsCommand(group, deps);
  showCommand(group, deps);
  nextCommand(group, deps);
  for (const verb of ["claim", "release", "skip"] as const) itemCommand(group, deps, verb);
  reassignCommand(group, deps);
  doCommand(group, deps);
  rescoreCommand(group, deps);
}

const AS_HELP = "the person who works (a person the store knows: jobs users add)";

/** The global options of a command that acts as `--as` (its own `--reason`). */
function acting(command: Command, mode: "read" | "write" = "write"): Command {
  return globalOptions(
    command.requiredOption("--as <person>", AS_HELP),
    {
      db: { mode },
      config: { for: "which declares the work queue" },
      json: true,
      audit: { not: "--as names who acts, and the audit row names them", reasonFilters: true },
    },
  );
}

/** Runs one command: the queue from the file, the store opened, a refusal as one line. */
async function run<T>(
  command: string,
  queueId: string,
  options: WorkOptions,
  deps: CliDeps,
  mode: "read" | "write",
  fn: (store: Store, queue: WorkQueueDefinition) => Promise<T>,
): Promise<T> {
  const file = configPath(options.config, deps);
  const { config } = await requireConfig(command, file, deps, { json: options.json });
  const queue = refusing(command, () => workQueue(config.workQueues, queueId));
  return await withStore(command, dbPath(options.db, deps), mode, deps, async (store) => {
    try {
      return await fn(store, queue);
    } catch (error) {
      if (error instanceof WorkRefused) throw failed(command, error);
      throw error;
    }
  });
}

function failed(command: string, error: WorkRefused): CommandFailed {
  return new CommandFailed(`jobs ${command}: ${echo(error.message, 300)} [${error.code}]`);
}

function refusing<T>(command: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof WorkRefused) throw failed(command, error);
    throw error;
  }
}

/** The person `--as` names, as the door's actor from the command line. */
function actor(store: Store, options: WorkOptions, deps: CliDeps): Promise<WorkActor> {
  return workActor(store, options.as!, {
    door: "cli",
    osUser: deps.osUser(),
    reason: options.reason ?? null,
    now: deps.clock.now(),
  });
}

/** An item as `--json` prints it. */
function itemJson(item: WorkItemView) {
  return {
    key: item.key,
    score: item.score,
    inputs: item.inputs,
    terms: item.terms,
    rule: item.rule,
    ruleVersion: item.ruleVersion,
    tenant: item.tenant,
    data: item.data,
    state: item.state,
    requestedAt: new Date(item.requestedAt).toISOString(),
    ageMs: item.ageMs,
    claim: item.claim && {
      owner: item.claim.owner,
      expiresAt: new Date(item.claim.expiresAt).toISOString(),
      fence: item.claim.fence,
    },
    outcome: item.outcome,
    actionJobId: item.actionJobId,
    actionState: item.actionState,
  };
}

/** `1900 amount, 6.0d age, true evidence_missing`: the inputs a score came from. */
function inputsText(item: WorkItemView): string {
  return item.terms.map((t) =>
    t.input === "age"
      ? `age ${(Number(t.value) / 86_400_000).toFixed(1)}d`
      : `${t.input} ${JSON.stringify(t.value)}`
  ).join(", ");
}

function addCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("add")
        .description(
          "add an item to a work queue, or update the one with its key (keeps its place)",
        )
        .argument("<queue>", "the work queue")
        .requiredOption("--key <key>", "the item's key, unique in the queue")
        .requiredOption("--data <json>", "the item's data, a JSON object", parseJson)
        .option("--tenant <tenant>", "the tenant it belongs to")
        .option("--as <person>", `${AS_HELP}; default: the host, as --actor or the OS user`),
      {
        db: { mode: "write" },
        config: { for: "which declares the work queue" },
        json: true,
        audit: { reason: "optional" },
      },
    ).action(
      async (
        queueId: string,
        options: WorkOptions & { key: string; data: unknown; tenant?: string },
      ) => {
        await run("work add", queueId, options, deps, "write", async (store, queue) => {
          const who: WorkActor = options.as !== undefined ? await actor(store, options, deps) : {
            person: options.actor ?? deps.osUser(),
            roles: ["admin"],
            tenant: null,
            door: "cli",
            osUser: deps.osUser(),
            reason: options.reason ?? null,
            now: deps.clock.now(),
          };
          const added = await addWorkItem(store, queue, {
            key: options.key,
            data: options.data as Record<string, unknown>,
            ...(options.tenant === undefined ? {} : { tenant: options.tenant }),
          }, who);
          if (options.json) {
            deps.out(safeJson({ ...itemJson(added.item), created: added.created }));
            return;
          }
          deps.out(
            `${added.created ? "added" : "updated"} ${cell(added.item.key)} in work queue ${
              cell(queue.id)
            }${added.item.score === null ? "" : `, score ${added.item.score}`}`,
          );
        });
      },
    ),
    deps,
    "work add",
  );
}

function lsCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("ls")
        .description("list a work queue's items in the order people get them, with scores")
        .argument("<queue>", "the work queue")
        .option("--done", "the items acted on, instead of the open ones")
        .option("--limit <n>", "at most this many", wholeNumber(1, 1_000_000))
        .option("--tenant <tenant>", "one tenant's items only"),
      {
        db: { mode: "read" },
        config: { for: "which declares the work queue" },
        json: true,
        audit: { not: "it changes nothing" },
      },
    ).action(
      async (
        queueId: string,
        options: WorkOptions & { done?: boolean; limit?: number; tenant?: string },
      ) => {
        await run("work ls", queueId, options, deps, "read", async (store, queue) => {
          const items = await listWorkItems(
            store,
            queue,
            { tenant: options.tenant ?? null, now: deps.clock.now() },
            {
              state: options.done ? "done" : "open",
              ...(options.limit === undefined ? {} : { limit: options.limit }),
            },
          );
          if (options.json) {
            deps.out(safeJson({ queue: queue.id, items: items.map(itemJson) }));
            return;
          }
          if (items.length === 0) {
            deps.out(`work queue ${cell(queue.id)}: no ${options.done ? "done" : "open"} items`);
            return;
          }
          const rows = [["KEY", "SCORE", "CLAIM", "INPUTS"]];
          for (const item of items) {
            rows.push([
              cell(item.key),
              item.score === null ? "-" : String(item.score),
              item.claim ? cell(item.claim.owner) : item.outcome ? `done: ${item.outcome}` : "-",
              queue.score === null
                ? `age ${(item.ageMs / 86_400_000).toFixed(1)}d`
                : inputsText(item),
            ]);
          }
          for (const line of table(rows)) deps.out(line);
        });
      },
    ),
    deps,
    "work ls",
  );
}

function showCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("show")
        .description("one item of a work queue: its data, score with inputs, claim and history")
        .argument("<queue>", "the work queue")
        .argument("<key>", "the item's key")
        .option("--tenant <tenant>", "the item of this tenant"),
      {
        db: { mode: "read" },
        config: { for: "which declares the work queue" },
        json: true,
        audit: { not: "it changes nothing" },
      },
    ).action(async (queueId: string, key: string, options: WorkOptions & { tenant?: string }) => {
      await run("work show", queueId, options, deps, "read", async (store, queue) => {
        const detail = await workItemDetail(store, queue, key, {
          tenant: options.tenant ?? null,
          now: deps.clock.now(),
        });
        if (detail === null) {
          throw new CommandFailed(
            `work show: no item ${JSON.stringify(key)} in work queue ${JSON.stringify(queue.id)}${
              options.tenant ? ` of tenant ${JSON.stringify(options.tenant)}` : ""
            }`,
          );
        }
        const history = detail.history.map((e) => ({
          at: new Date(e.at).toISOString(),
          kind: e.kind,
          actor: e.actor,
          reason: e.reason,
          fence: e.fence,
        }));
        if (options.json) {
          deps.out(safeJson({ queue: queue.id, item: itemJson(detail.item), history }));
          return;
        }
        const { item } = detail;
        deps.out(
          `${cell(queue.id)}/${cell(item.key)}: ${item.state}${
            item.outcome ? `, done: ${cell(item.outcome)}` : ""
          }${item.actionJobId === null ? "" : ` (job ${item.actionJobId})`}`,
        );
        if (item.score !== null) deps.out(`  score ${item.score}: ${inputsText(item)}`);
        deps.out(
          `  claim ${
            item.claim
              ? `${cell(item.claim.owner)} until ${
                new Date(item.claim.expiresAt).toISOString()
              }, fence ${item.claim.fence}`
              : "none"
          }`,
        );
        deps.out(`  data ${cell(JSON.stringify(item.data))}`);
        for (
          const line of table(
            history.map((e) => [e.at, e.kind, cell(e.actor), cell(e.reason ?? "")]),
          )
        ) {
          deps.out(`  ${line}`);
        }
      });
    }),
    deps,
    "work show",
  );
}

function nextCommand(group: Command, deps: CliDeps): void {
  quiet(
    acting(
      group.command("next")
        .description("claim the highest unclaimed item of a work queue for yourself (audited)")
        .argument("<queue>", "the work queue"),
    ),
    deps,
    "work next",
  ).action(async (queueId: string, options: WorkOptions) => {
    await run("work next", queueId, options, deps, "write", async (store, queue) => {
      const item = await nextWorkItem(store, queue, await actor(store, options, deps));
      if (options.json) {
        deps.out(safeJson(item === null ? { key: null } : itemJson(item)));
        return;
      }
      deps.out(
        item === null
          ? `work queue ${cell(queue.id)}: nothing left to claim`
          : `claimed ${cell(item.key)} until ${new Date(item.claim!.expiresAt).toISOString()}${
            item.score === null ? "" : ` (score ${item.score})`
          }`,
      );
    });
  });
}

function itemCommand(group: Command, deps: CliDeps, verb: "claim" | "release" | "skip"): void {
  const description = {
    claim: "claim an item for yourself (audited); --break takes another's optional hold",
    release: "give back your claim on an item (audited)",
    skip: "hide an item from your next for a while, giving back your claim (audited)",
  }[verb];
  const command = group.command(verb)
    .description(description)
    .argument("<queue>", "the work queue")
    .argument("<key>", "the item's key")
    .option("--reason <text>", "why, for the audit trail and the item's history", parseReason);
  if (verb === "claim") {
    command.option("--break", "take the hold another person has (optional queues; needs --reason)");
  }
  if (verb === "skip") {
    command.option(
      "--for <duration>",
      "how long it stays hidden from you (default 1h)",
      parseDuration,
    );
  }
  if (verb === "release") {
    command.option(
      "--fence <n>",
      "only this claim (its fence)",
      wholeNumber(0, Number.MAX_SAFE_INTEGER),
    );
  }
  const name = `work ${verb}`;
  quiet(acting(command), deps, name).action(
    async (
      queueId: string,
      key: string,
      options: WorkOptions & { break?: boolean; for?: number; fence?: number },
    ) => {
      if (options.break && options.reason === undefined) {
        throw new CommandFailed(`jobs ${name}: --break needs --reason: why you take it over`, 2);
      }
      await run(name, queueId, options, deps, "write", async (store, queue) => {
        const who = await actor(store, options, deps);
        const item = verb === "claim"
          ? await claimWorkItem(
            store,
            queue,
            key,
            who,
            options.break ? { breakReason: options.reason! } : {},
          )
          : verb === "release"
          ? await releaseWorkItem(
            store,
            queue,
            key,
            who,
            options.fence === undefined ? {} : { fence: options.fence },
          )
          : await skipWorkItem(
            store,
            queue,
            key,
            who,
            options.for === undefined ? {} : { forMs: options.for },
          );
        if (options.json) {
          deps.out(safeJson(itemJson(item)));
          return;
        }
        deps.out(
          verb === "claim"
            ? `claimed ${cell(key)} until ${new Date(item.claim!.expiresAt).toISOString()} (fence ${
              item.claim!.fence
            })`
            : verb === "release"
            ? `released ${cell(key)}`
            : `skipped ${cell(key)} until ${new Date(item.skipped!.until).toISOString()}`,
        );
      });
    },
  );
}

function reassignCommand(group: Command, deps: CliDeps): void {
  quiet(
    acting(
      group.command("reassign")
        .description("give an item's claim to another person (audited)")
        .argument("<queue>", "the work queue")
        .argument("<key>", "the item's key")
        .requiredOption("--to <person>", "who takes it over")
        .option("--reason <text>", "why, for the audit trail and the item's history", parseReason),
    ),
    deps,
    "work reassign",
  ).action(async (queueId: string, key: string, options: WorkOptions & { to: string }) => {
    await run("work reassign", queueId, options, deps, "write", async (store, queue) => {
      const item = await reassignWorkItem(
        store,
        queue,
        key,
        options.to,
        await actor(store, options, deps),
      );
      if (options.json) {
        deps.out(safeJson(itemJson(item)));
        return;
      }
      deps.out(
        `${cell(key)} is ${cell(options.to)}'s until ${
          new Date(item.claim!.expiresAt).toISOString()
        }`,
      );
    });
  });
}

function doCommand(group: Command, deps: CliDeps): void {
  quiet(
    acting(
      group.command("do")
        .description("act on an item: its action runs as one job, and the item is done (audited)")
        .argument("<queue>", "the work queue")
        .argument("<key>", "the item's key")
        .argument("<action>", "one of the queue's actions")
        .option("--reason <text>", "why, for the audit trail and the item's history", parseReason)
        .option(
          "--fence <n>",
          "your claim's fence (default: your current claim's)",
          wholeNumber(0, Number.MAX_SAFE_INTEGER),
        )
        .option("--break", "act on an item another person holds (optional queues; needs --reason)"),
    ),
    deps,
    "work do",
  ).action(
    async (
      queueId: string,
      key: string,
      action: string,
      options: WorkOptions & { fence?: number; break?: boolean },
    ) => {
      if (options.break && options.reason === undefined) {
        throw new CommandFailed(`jobs work do: --break needs --reason: why you take it over`, 2);
      }
      await run("work do", queueId, options, deps, "write", async (store, queue) => {
        const done = await doWorkItem(
          store,
          queue,
          key,
          action,
          await actor(store, options, deps),
          {
            ...(options.fence === undefined ? {} : { fence: options.fence }),
            ...(options.break ? { breakReason: options.reason! } : {}),
          },
        );
        if (options.json) {
          deps.out(safeJson({ ...itemJson(done.item), jobId: done.jobId }));
          return;
        }
        deps.out(`${cell(key)}: ${cell(action)} runs as job ${done.jobId}; the item is done`);
      });
    },
  );
}

function rescoreCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("rescore")
        .description(
          "rescore the open items a change of the queue's score rule left on another version " +
            "(audited)",
        )
        .argument("<queue>", "the work queue")
        .option("--limit <n>", "at most this many (default 1000)", wholeNumber(1, 1_000_000)),
      {
        db: { mode: "write" },
        config: { for: "which declares the work queue and its rule" },
        json: true,
        audit: { reason: "optional" },
      },
    ).action(async (queueId: string, options: WorkOptions & { limit?: number }) => {
      await run("work rescore", queueId, options, deps, "write", async (store, queue) => {
        const result = await rescoreWorkQueue(
          store,
          queue,
          who(options, deps),
          options.limit === undefined ? {} : { limit: options.limit },
        );
        if (options.json) {
          deps.out(safeJson({ queue: queue.id, ...result }));
          return;
        }
        deps.out(
          `work queue ${cell(queue.id)}: ${result.rescored} rescored${
            result.left ? "; more are left: run it again" : ""
          }`,
        );
      });
    }),
    deps,
    "work rescore",
  );
}
