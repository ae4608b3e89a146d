/**
 * The report commands: `jobs report <id> --param k=v --tenant T --actor A
 * --role R` (a run of a report the schedules file declares, its request
 * checked and its limits applied before it runs; prints the run id at
 * once, or with `--wait` runs it to the end here, or waits for a live
 * daemon's run, and prints `run`, `state`, `rows`, `bytes` and `output`),
 * `jobs reports` (runs with their progress, state and expiry) and `jobs
 * report url <run> [--ttl 10m]` (a short-lived download link: the bucket's
 * pre-signed URL, or a token the daemon's `/downloads/` serves, joined to
 * the public URL the daemon stored or to `--base`). Each is a
 * thin call into `src/admin/reports.ts`, which the daemon's endpoint
 * shares.
 *
 * @module
 */

import { type Command, InvalidArgumentError } from "commander";
import {
  linkBase,
  parsePublicUrl,
  PublicUrlInvalid,
  type StoredPublicUrl,
} from "../admin/public_url.ts";
import {
  mintLink,
  ReportRequestError,
  reportRuns,
  runJson,
  startReport,
} from "../admin/reports.ts";
import type { CompiledReport } from "../report/definition.ts";
import { ReportLimitExceeded } from "../report/limits.ts";
import { REPORT_QUEUE, type ReportRun } from "../report/types.ts";
import { redact } from "../kernel/redact.ts";
import { reportWorker, storageOf } from "../runners/report.ts";
import { when } from "../schedule/describe.ts";
import type { Store } from "../store/store.ts";
import { prunerSettings } from "../runtime/pruner.ts";
import {
  type CliDeps,
  CommandFailed,
  configPath,
  dbPath,
  declaredIn,
  globalOptions,
  parseCount,
  parseDuration,
  positiveId,
  quiet,
} from "./common.ts";
import { configIfAny, requireConfig } from "./config.ts";
import { withStore } from "./store/open.ts";
import { daemonsServing, untilEnded } from "./run_here.ts";
import { cell, echo, iso, safeJson, table } from "./text.ts";

/** A download link lives this long unless `--ttl` says otherwise. */
export const DEFAULT_LINK_TTL_MS = 10 * 60_000;

/** Registers `report`, `report url` and `reports` on the program. */
export function registerReportCommands(program: Command, deps: CliDeps): void {
  const report = reportCommand(program, deps);
  urlCommand(report, deps);
  reportsCommand(program, deps);
}

/** `k=v` of `--param`, collected. */
function param(value: string, previous: Record<string, string>): Record<string, string> {
  const at = value.indexOf("=");
  if (at <= 0) throw new InvalidArgumentError(`"${echo(value)}" is not name=value`);
  const name = value.slice(0, at);
  // Own properties only: `constructor` is in every object, given or not.
  if (Object.hasOwn(previous, name)) {
    throw new InvalidArgumentError(`--param ${echo(name)} is given twice`);
  }
  // A computed key defines an own property, even `__proto__` (refused later as undeclared).
  return { ...previous, [name]: value.slice(at + 1) };
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

// ------------------------------------------------------------------- report

interface ReportOptions {
  param: Record<string, string>;
  tenant?: string;
  actor?: string;
  role: string[];
  sort?: string;
  wait?: boolean;
  db?: string;
  config?: string;
  json?: boolean;
}

function reportCommand(program: Command, deps: CliDeps): Command {
  return quiet(
    globalOptions(
      program.command("report")
        .description(
          "run a report the schedules file declares (audited); prints its run id, or with " +
            "--wait its rows, bytes and output",
        )
        .argument("<report>", "the report's id")
        .option("--param <name=value>", "a declared parameter (repeat for each)", param, {})
        .option("--tenant <tenant>", "whose rows it reads: bound as :tenant")
        .option("--role <role>", "a role of the actor (repeat for each)", collect, [])
        .option("--sort <key>", "one of the report's sort keys")
        .option(
          "--wait",
          "run it to the end in this process (or wait for the run of a live daemon that serves " +
            "the reports queue); exit 1 when it did not complete",
        )
        // `report url --json` is the subcommand's.
        .enablePositionalOptions(),
      {
        db: { mode: "write" },
        config: { for: "which declares the report" },
        json: true,
        audit: { noReason: "the report's audit.reason is recorded with every run" },
      },
    ).action(async (id: string, options: ReportOptions) => {
      const file = configPath(options.config, deps);
      const { config } = await requireConfig("report", file, deps);
      const report = declaredIn("report", "report", config.reports, file, id);
      const actor = options.actor ?? deps.osUser();
      await withStore("report", dbPath(options.db, deps), "write", deps, async (store) => {
        const started = await startReport(store, report, {
          params: options.param,
          tenant: options.tenant ?? null,
          actor,
          roles: options.role,
          sort: options.sort ?? null,
        }, deps.clock.now()).catch((error) => {
          if (error instanceof ReportRequestError || error instanceof ReportLimitExceeded) {
            throw new CommandFailed(`jobs report: ${echo(error.message, 600)}`, 1);
          }
          throw error;
        });
        const run = started.run;
        if (!options.wait) {
          const serving = await daemonsServing(store, REPORT_QUEUE, deps.clock.now());
          if (options.json) {
            deps.out(
              safeJson({ run: run.id, job: started.job, report: report.id, state: run.state }),
            );
          } else deps.out(String(run.id));
          deps.err(
            `jobs report: run ${run.id} of ${cell(report.id)} queued (job ${started.job}): ` +
              (serving.length > 0
                ? `${serving.map(cell).join(", ")} will run it`
                : `no live daemon serves the ${REPORT_QUEUE} queue; --wait runs it in this process`),
          );
          return;
        }
        const pruning = prunerSettings(config.pruner);
        const ran = await untilEnded(store, started.job, {
          command: "report",
          queue: REPORT_QUEUE,
          workers: (logger) => [
            reportWorker({ store: () => store, clock: deps.clock, logger, env: deps.env }),
          ],
          pruner: { batch: pruning.batch, retention: pruning.retention },
          resumes: "the run starts again when a daemon (or jobs report --wait) runs the queue",
        }, deps);
        const ended = await store.reportRunGet({ id: run.id });
        printRun(ended, ran.by, report, options, deps);
      });
    }),
    deps,
    "report",
  );
}

/** Prints the ended run; fails when it did not complete. */
function printRun(
  run: ReportRun | null,
  daemons: string[] | null,
  report: CompiledReport,
  options: ReportOptions,
  deps: CliDeps,
): void {
  if (!run) throw new CommandFailed(`jobs report: the run of ${echo(report.id)} is gone`);
  if (options.json) deps.out(safeJson({ ...runJson(run), ranBy: daemons ?? "here" }));
  else if (run.state === "completed") {
    deps.out(
      `report ${cell(report.id)} run ${run.id} completed: ${run.rows} rows, ` +
        `${run.bytes} bytes to ${cell(run.output ?? "")}`,
    );
  }
  if (run.state !== "completed") {
    throw new CommandFailed(
      `jobs report: report "${echo(report.id)}" run ${run.id} ended ${run.state}` +
        (run.error ? `: ${echo(run.error, 600)}` : ""),
    );
  }
}

// ---------------------------------------------------------------------- url

function urlCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("url")
        .description(
          "a short-lived download link to a run's output (audited): the bucket's pre-signed URL, " +
            "or a link the daemon's /downloads/ serves",
        )
        .argument("<run>", "the run's id", positiveId("run id"))
        .option(
          "--ttl <duration>",
          "how long the link works (never past the output's expiry)",
          parseDuration,
          DEFAULT_LINK_TTL_MS,
        )
        .option(
          "--base <url>",
          "where people reach the daemon (https://host[:port][/path]), instead of the public " +
            "URL the daemon stored",
          parseBase,
        ),
      {
        db: { mode: "write" },
        config: { for: "which declares the run's report" },
        json: true,
        audit: { noReason: "the report's audit.reason is recorded with every link" },
      },
    ).action(async (id: number, options: {
      ttl: number;
      base?: string;
      db?: string;
      config?: string;
      json?: boolean;
      actor?: string;
    }) => {
      const file = configPath(options.config, deps);
      const { config } = await requireConfig("report url", file, deps);
      await withStore("report url", dbPath(options.db, deps), "write", deps, async (store) => {
        const run = await store.reportRunGet({ id });
        if (!run) throw new CommandFailed(`jobs report url: there is no run ${id}`);
        const report = declaredIn("report url", "report", config.reports, file, run.report);
        let stored: StoredPublicUrl | null = null;
        const link = await mintLink({
          store,
          report,
          storage: storageOf(deps.env)(report),
          runId: id,
          actor: options.actor ?? deps.osUser(),
          ttlMs: options.ttl,
          now: deps.clock.now(),
          base: async () => {
            const found = await linkBase(store, options.base ? { given: options.base } : {});
            stored = found.stored;
            return found.url;
          },
        }).catch((error) => {
          throw new CommandFailed(`jobs report url: ${echo((error as Error).message, 400)}`);
        });
        if (options.json) {
          deps.out(safeJson({ ...link, expires: iso(link.expires) }));
        } else deps.out(link.url);
        if (stored !== null) {
          deps.err(`jobs report url: ${servedBy(stored)}; works until ${iso(link.expires)}`);
        }
      });
    }),
    deps,
    "report url",
  );
}

/** `--base`, canonical; refused (exit 2) naming the value unless an http or https URL. */
function parseBase(value: string): string {
  try {
    return parsePublicUrl(value);
  } catch (error) {
    if (error instanceof PublicUrlInvalid) {
      throw new InvalidArgumentError(`"${echo(redact(value))}" ${error.message}`);
    }
    throw error;
  }
}

/** Which daemon's URL a link was joined to, and how it came to be stored. */
function servedBy(stored: StoredPublicUrl): string {
  const at = `served by the daemon's /downloads/ at ${cell(stored.url)}`;
  return stored.source === "explicit"
    ? `${at} (its public URL, ${cell(stored.from)} of node ${cell(stored.node)})`
    : `${at} (the address node ${cell(stored.node)} listens on; start the daemon with ` +
      `--public-url when people reach it elsewhere)`;
}

// ------------------------------------------------------------------ reports

function reportsCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("reports")
        .description("report runs, newest first: state, rows and bytes written, output and expiry")
        .option("--report <id>", "only this report's runs")
        .option("--tenant <tenant>", "only this tenant's runs")
        .option("--limit <n>", "how many runs", parseCount, 50),
      {
        db: { mode: "read" },
        config: { for: "for the declared reports (read when it exists)" },
        json: true,
        audit: { not: "it only reads: nothing to audit" },
      },
    ).action(async (options: {
      report?: string;
      tenant?: string;
      limit: number;
      db?: string;
      config?: string;
      json?: boolean;
    }) => {
      const loaded = await configIfAny("reports", options.config, deps, { lenient: true });
      const now = deps.clock.now();
      await withStore("reports", dbPath(options.db, deps), "read", deps, async (store: Store) => {
        const runs = await reportRuns(store, {
          ...(options.report ? { report: options.report } : {}),
          ...(options.tenant ? { tenant: options.tenant } : {}),
          limit: options.limit,
        });
        if (options.json) {
          deps.out(safeJson(runs.map(runJson)));
          return;
        }
        if (runs.length === 0) {
          const declared = loaded.config?.reports.map((r) => r.id) ?? [];
          deps.out(
            `no report runs${
              declared.length ? ` (declared: ${declared.map(cell).join(", ")})` : ""
            }`,
          );
          return;
        }
        const header = [
          "RUN",
          "JOB",
          "REPORT",
          "TENANT",
          "STATE",
          "ROWS",
          "BYTES",
          "REQUESTED",
          "EXPIRES",
          "OUTPUT / ERROR",
        ];
        const rows = runs.map((r) => [
          String(r.id),
          String(r.jobId),
          cell(r.report),
          cell(r.tenant ?? "-"),
          r.state,
          String(r.rows),
          String(r.bytes),
          when(r.requestedAt, now),
          r.expiresAt === null ? "-" : when(r.expiresAt, now),
          cell(r.state === "completed" ? r.output ?? "" : r.error ?? ""),
        ]);
        for (const line of table([header, ...rows])) deps.out(line);
      });
    }),
    deps,
    "reports",
  );
}
