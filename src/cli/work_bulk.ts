/**
 * `jobs bulk preview|request|confirm`: bulk money on the work queues the
 * schedules file declares (`src/admin/work_bulk.ts`). `preview <queue>
 * <bulk> [--key <k>]...` shows the exact set with each amount, the totals
 * and the manifest; `request <manifest>` sends a code bound to it through
 * the bulk's `confirm_by:` (never printed here); `confirm <manifest> --code
 * <code>` checks it and runs the set, one job per item. `--as <person>`
 * names who acts; each step is audited with the person, the door `cli` and
 * the OS user. A mailed code goes through the SMTP server `JOBS_SMTP_URL`
 * and `JOBS_SMTP_FROM` name.
 *
 * @module
 */

import type { Command } from "commander";
import { type WorkActor, workActor, WorkRefused } from "../admin/work.ts";
import { confirmWorkBulk, previewWorkBulk, requestWorkBulk } from "../admin/work_bulk.ts";
import type { Store } from "../store/store.ts";
import { type SmtpSettings, smtpSettingsFromEnv } from "../workqueue/channels.ts";
import { BulkRefused, bulkRequestJson } from "../workqueue/confirm.ts";
import { looksLikeManifest } from "../workqueue/manifest.ts";
import type { WorkQueueDefinition } from "../workqueue/types.ts";
import { type CliDeps, CommandFailed, configPath, dbPath, globalOptions, quiet } from "./common.ts";
import { requireConfig } from "./config.ts";
import { principalGroup } from "./principals.ts";
import { withStore } from "./store/open.ts";
import { cell, echo, safeJson, table } from "./text.ts";

const SUBCOMMANDS = ["preview", "request", "confirm"] as const;

interface BulkOptions {
  db?: string;
  config?: string;
  json?: boolean;
  as: string;
  reason?: string;
}

const AS_HELP = "the person who acts (a person the store knows: jobs users add)";

/** Registers `bulk` and its commands on the program. */
export function registerWorkBulkCommands(program: Command, deps: CliDeps): void {
  const group = principalGroup(
    program,
    deps,
    "bulk",
    "bulk money on a work queue, confirmed by a code from outside the session: preview, " +
      "request, confirm (audited)",
    SUBCOMMANDS,
  );
  previewCommand(group, deps);
  requestCommand(group, deps);
  confirmCommand(group, deps);
}

function acting(command: Command): Command {
  return globalOptions(command.requiredOption("--as <person>", AS_HELP), {
    db: { mode: "write" },
    config: { for: "which declares the work queue and its bulk actions" },
    json: true,
    audit: { not: "--as names who acts, and the audit row names them", reasonFilters: true },
  });
}

/** Runs one command: the queues from the file, the store opened, a refusal as one line. */
async function run<T>(
  command: string,
  options: BulkOptions,
  deps: CliDeps,
  fn: (store: Store, queues: readonly WorkQueueDefinition[], who: WorkActor) => Promise<T>,
): Promise<T> {
  const file = configPath(options.config, deps);
  const { config } = await requireConfig(command, file, deps, { json: options.json });
  return await withStore(command, dbPath(options.db, deps), "write", deps, async (store) => {
    try {
      const who = await workActor(store, options.as, {
        door: "cli",
        osUser: deps.osUser(),
        reason: options.reason ?? null,
        now: deps.clock.now(),
      });
      return await fn(store, config.workQueues, who);
    } catch (error) {
      if (error instanceof WorkRefused) {
        throw new CommandFailed(`jobs ${command}: ${echo(error.message, 300)} [${error.code}]`);
      }
      if (error instanceof BulkRefused) {
        throw new CommandFailed(`jobs ${command}: ${echo(error.message, 300)} [${error.why}]`);
      }
      throw error;
    }
  });
}

function manifestArgument(command: string, manifest: string): string {
  if (!looksLikeManifest(manifest)) {
    throw new CommandFailed(
      `jobs ${command}: ${
        JSON.stringify(echo(manifest, 80))
      } is not a manifest (64 lowercase hex digits, as jobs bulk preview prints it)`,
      2,
    );
  }
  return manifest;
}

/** The SMTP server of mailed codes, from the environment; a bad setting is a usage error. */
function smtpOf(command: string, deps: CliDeps): SmtpSettings | null {
  try {
    return smtpSettingsFromEnv({
      JOBS_SMTP_URL: deps.env("JOBS_SMTP_URL"),
      JOBS_SMTP_FROM: deps.env("JOBS_SMTP_FROM"),
    });
  } catch (error) {
    throw new CommandFailed(`jobs ${command}: ${(error as Error).message}`, 2);
  }
}

function totalsText(totals: Record<string, string>): string {
  return Object.entries(totals).map(([currency, amount]) => `${currency} ${amount}`).join(", ") ||
    "nothing";
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function previewCommand(group: Command, deps: CliDeps): void {
  quiet(
    acting(
      group.command("preview")
        .description("show the exact set a bulk action would act on, its amounts and totals")
        .argument("<queue>", "the work queue")
        .argument("<bulk>", "one of its bulk actions")
        .option(
          "--key <key>",
          "only this item (repeat for several); default: every open item",
          collect,
        ),
    ),
    deps,
    "bulk preview",
  ).action(
    async (queueId: string, bulkId: string, options: BulkOptions & { key?: string[] }) => {
      await run("bulk preview", options, deps, async (store, queues, who) => {
        const preview = await previewWorkBulk(store, queues, {
          queue: queueId,
          bulk: bulkId,
          ...(options.key === undefined ? {} : { keys: options.key }),
        }, who);
        if (options.json) {
          deps.out(safeJson({
            manifest: preview.manifest.hash,
            queue: preview.queue,
            bulk: preview.bulk,
            action: preview.action,
            items: preview.items.map((i) => ({
              key: i.key,
              amount: i.amount,
              currency: i.currency,
              tenant: i.tenant,
              score: i.item.score,
            })),
            totals: preview.totals,
          }));
          return;
        }
        const rows = [["KEY", "AMOUNT", "CURRENCY"]];
        for (const i of preview.items) rows.push([cell(i.key), i.amount, i.currency]);
        for (const line of table(rows)) deps.out(line);
        deps.out(
          `${preview.items.length} item${preview.items.length === 1 ? "" : "s"} totalling ${
            totalsText(preview.totals)
          }; action ${cell(preview.action)}; nothing acted`,
        );
        deps.out(`manifest ${preview.manifest.hash}`);
        deps.out(
          `ask for its code: ${deps.program} bulk request ${preview.manifest.hash} --as ${
            cell(who.person)
          }`,
        );
      });
    },
  );
}

function requestCommand(group: Command, deps: CliDeps): void {
  quiet(
    acting(
      group.command("request")
        .description(
          "send a code bound to a previewed manifest through the bulk's confirm_by (audited)",
        )
        .argument("<manifest>", "the manifest jobs bulk preview printed"),
    ),
    deps,
    "bulk request",
  ).action(async (manifest: string, options: BulkOptions) => {
    manifestArgument("bulk request", manifest);
    const smtp = smtpOf("bulk request", deps);
    await run("bulk request", options, deps, async (store, queues, who) => {
      const request = await requestWorkBulk(
        store,
        { clock: deps.clock, smtp },
        queues,
        { manifest },
        who,
      );
      if (options.json) {
        deps.out(safeJson(bulkRequestJson(request)));
        return;
      }
      deps.out(
        `${
          request.channel === "totp"
            ? "an approver's authenticator gives the code"
            : `a code was sent by ${request.channel}`
        } for ${request.items.length} item${request.items.length === 1 ? "" : "s"} totalling ${
          totalsText(request.totals)
        }; it works once, until ${new Date(request.expiresAt).toISOString()}${
          request.secondPerson ? ", confirmed by another person with the approver role" : ""
        }`,
      );
      deps.out(`confirm: ${deps.program} bulk confirm ${manifest} --code <code> --as <approver>`);
    });
  });
}

function confirmCommand(group: Command, deps: CliDeps): void {
  quiet(
    acting(
      group.command("confirm")
        .description("confirm a manifest with its code and run its items, one job each (audited)")
        .argument("<manifest>", "the manifest jobs bulk preview printed")
        .requiredOption("--code <code>", "the code that came out of band"),
    ),
    deps,
    "bulk confirm",
  ).action(async (manifest: string, options: BulkOptions & { code: string }) => {
    manifestArgument("bulk confirm", manifest);
    await run("bulk confirm", options, deps, async (store, queues, who) => {
      const result = await confirmWorkBulk(
        store,
        { clock: deps.clock },
        queues,
        { manifest, code: options.code },
        who,
      );
      const failed = result.outcomes.filter((o) => !o.ok).length;
      if (options.json) {
        deps.out(safeJson({
          request: bulkRequestJson(result.request),
          outcomes: result.outcomes,
        }));
      } else {
        for (const o of result.outcomes) {
          deps.out(
            o.ok
              ? `${cell(o.key)}: job ${o.jobId}`
              : `${cell(o.key)}: refused: ${echo(o.message, 200)} [${o.code}]`,
          );
        }
        deps.out(
          `confirmed: ${result.outcomes.length - failed} of ${result.outcomes.length} items run`,
        );
      }
      if (failed > 0) {
        throw new CommandFailed(
          `jobs bulk confirm: ${failed} item${failed === 1 ? "" : "s"} changed and did not run`,
        );
      }
    });
  });
}
