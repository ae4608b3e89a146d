/**
 * `jobs daemon`: runs the schedules of `schedules.yaml` and the queued work
 * on the store until stopped. It plans occurrences, runs them with the
 * command, HTTP and TypeScript-worker runners, picks up edits of the file
 * (on save, and on SIGHUP), and on SIGTERM or SIGINT shuts down in order; a
 * second signal exits at once (one within 500 ms of the first is taken for
 * the same keypress delivered twice).
 *
 * It serves /healthz, /readyz and /metrics on `--listen` (loopback unless a
 * token is given), and report downloads, whose links are joined to the
 * public URL it stores at start: `--public-url` (`JOBS_PUBLIC_URL`), else
 * the URL it listens on unless an explicit one is stored already
 * (`src/admin/public_url.ts`). /metrics counts what the runtime reports
 * (its events pass through a {@linkcode MetricsRegistry} on their way to
 * the logger); /readyz answers 503 while the store refuses the node's
 * writes, which the runtime rides out (backs off, keeps unwritten results,
 * fails no job).
 *
 * A store whose file is deleted or replaced while the daemon runs is not
 * ridden out: every write since went into a file nobody can reach. The
 * daemon logs `store.degraded` with the reason, /readyz says so, it stops
 * claiming, lets running jobs finish within the grace period (their results
 * cannot be recorded: each is logged as `job.unrecorded`), and exits 1
 * saying the last writes are lost; it creates no new file itself.
 *
 * Besides the command and HTTP runners it registers the fan-out runner, the
 * workflow start (`jobs.workflow`, a schedule's occurrence that starts a
 * workflow run) and the TypeScript workers of the module the file names
 * (`workers:`). A job started by `jobs run` for a manual schedule carries
 * the schedule's `runs_where`; a daemon whose `--environment` differs
 * discards it rather than touch the wrong environment.
 *
 * @module
 */

import { hostname } from "node:os";
import { type SmtpSettings, smtpSettingsFromEnv } from "../workqueue/channels.ts";
import {
  derivedPublicUrl,
  isWildcard,
  linkBase,
  parsePublicUrl,
  PublicUrlInvalid,
  readPublicUrl,
  recordPublicUrl,
} from "../admin/public_url.ts";
import type { Clock } from "../clock.ts";
import { redact } from "../kernel/redact.ts";
import { openJobs } from "../jobs.ts";
import { commandWorker } from "../runners/command.ts";
import { reapOrphans } from "../process/process_group.ts";
import { httpWorker } from "../runners/http.ts";
import { fanoutWorker } from "../runners/fanout.ts";
import { ingestWorker } from "../runners/ingest.ts";
import { REPORT_QUEUE, reportWorker, storageOf } from "../runners/report.ts";
import { BULK_QUEUE, bulkWorker } from "../admin/bulk_worker.ts";
import { pruneReports } from "../admin/reports.ts";
import type { CompiledPipeline } from "../ingest/types.ts";
import { workflowStartWorker } from "../runners/workflow_start.ts";
import { withWorkerDefaults } from "../workflow/definition.ts";
import { loadWorkersModule } from "../runners/workers_module.ts";
import { hostPrograms } from "../runners/programs.ts";
import { defineWorker, type Worker } from "../kernel/worker.ts";
import type { Schedule } from "../schedule/types.ts";
import type { StoreLostError } from "../store/errors.ts";
import type { Store } from "../store/store.ts";
import type { ScheduleConfig } from "../config/types.ts";
import type { FlowLimits } from "../kernel/flow.ts";
import type { Logger } from "../kernel/logger.ts";
import { ScheduleSource } from "../runtime/schedule_source.ts";
import { openWhenReachable } from "../runtime/store_health.ts";
import { describeLocation } from "../store/location.ts";
import { type HttpServer, startHttpServer } from "../http/server.ts";
import { MetricsRegistry, type MetricsSnapshot } from "../http/metrics.ts";
import { prunerSettings } from "../runtime/pruner.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { Command } from "commander";
import {
  type CliDeps,
  CommandFailed,
  configPath,
  dbPath,
  globalOptions,
  quiet,
  writeMoved,
} from "./common.ts";
import { locationProblem, openFailure } from "./store/open.ts";
import { storeOrigin } from "./project_file.ts";
import { escapeControl } from "../text/escape.ts";
import { groupsDirFor } from "./state_dir.ts";
import { echo } from "./text.ts";
import { tryParseDuration } from "../text/durations.ts";
import { DEFAULT_TIMEOUTS, type SessionTimeouts } from "../admin/sessions.ts";

/** Registers `jobs daemon` on the program. */
export function registerDaemonCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("daemon")
        .description("run the schedules of schedules.yaml and the queued work until stopped")
        .option("--queues <list>", "name:concurrency,... [env JOBS_QUEUES] (default: the file's)")
        .option("--node <name>", "this node's name [env JOBS_NODE] (default: host:pid:nonce)")
        .option(
          "--environment <name>",
          "where this daemon runs, shown in status [env JOBS_ENVIRONMENT]",
        )
        .option(
          "--shutdown-grace <ms>",
          "how long running jobs get on stop [env JOBS_SHUTDOWN_GRACE]",
        )
        .option(
          "--lease <ms>",
          "how long a claim holds a job without renewal; a job whose lease cannot be renewed " +
            "is stopped a quarter of it before it runs out [env JOBS_LEASE] (default: 30000)",
        )
        .option(
          "--listen <addr>",
          "host:port of /healthz, /readyz, /metrics, or off [env JOBS_LISTEN]",
        )
        .option("--token <token>", "required beyond loopback [env JOBS_TOKEN]")
        .option(
          "--public-url <url>",
          "where people reach this daemon (https://host[:port][/path]), stored for whole " +
            "download links; without it the listen address is stored unless a public URL was " +
            "given before [env JOBS_PUBLIC_URL]",
        )
        .option(
          "--state-dir <dir>",
          "where this host keeps the records of running commands (<dir>/groups), the same for " +
            "every daemon of one store here [env JOBS_STATE_DIR] (default: records in " +
            "<db>.groups beside a SQLite file; for PostgreSQL in " +
            "${XDG_STATE_HOME:-~/.local/state}/jobs/<host_port_db_schema_hash>/groups)",
        ),
      {
        db: { mode: "create" },
        config: { for: "to run, reloaded when it changes" },
        json: {
          not: "it prints a log, not a result: JSON lines on stderr when that is not a terminal",
        },
        audit: {
          not: "its writes are the runtime's, not an operator's; each job records its attempts",
        },
      },
    ).action(async (options: {
      db?: string;
      config?: string;
      queues?: string;
      node?: string;
      environment?: string;
      shutdownGrace?: string;
      lease?: string;
      listen?: string;
      token?: string;
      publicUrl?: string;
      stateDir?: string;
    }) => {
      const queues = options.queues ?? deps.env("JOBS_QUEUES");
      const graceText = options.shutdownGrace ?? deps.env("JOBS_SHUTDOWN_GRACE");
      const grace = Number(graceText ?? 25_000);
      if (!Number.isFinite(grace) || grace < 0) {
        throw new CommandFailed(
          `jobs daemon: --shutdown-grace "${graceText}" is not a number of ms`,
          2,
        );
      }
      const leaseText = options.lease ?? deps.env("JOBS_LEASE");
      const leaseMs = Number(leaseText ?? 30_000);
      if (!Number.isInteger(leaseMs) || leaseMs < 1000) {
        throw new CommandFailed(
          `jobs daemon: --lease "${leaseText}" is not a whole number of ms of at least 1000`,
          2,
        );
      }
      let parsedQueues: Record<string, number> | undefined;
      try {
        parsedQueues = queues ? parseQueues(queues) : undefined;
      } catch (error) {
        throw new CommandFailed(`jobs daemon: --queues ${(error as Error).message}`, 2);
      }
      const publicUrl = givenPublicUrl(options.publicUrl, deps.env);
      const sessionTimeouts = consoleTimeouts(deps.env);
      let smtp: SmtpSettings | null;
      try {
        smtp = smtpSettingsFromEnv({
          JOBS_SMTP_URL: deps.env("JOBS_SMTP_URL"),
          JOBS_SMTP_FROM: deps.env("JOBS_SMTP_FROM"),
        });
      } catch (error) {
        throw new CommandFailed(`jobs daemon: ${(error as Error).message}`, 2);
      }
      const db = dbPath(options.db, deps);
      // The store is created when missing, but not its directory: say so before anything starts.
      const missing = await locationProblem(db, "create", deps.program, storeOrigin(db, deps));
      if (missing) throw new CommandFailed(`jobs daemon: ${missing}`);
      await runDaemon({
        db,
        config: configPath(options.config, deps),
        queues: parsedQueues,
        node: options.node ?? deps.env("JOBS_NODE"),
        environment: options.environment ?? deps.env("JOBS_ENVIRONMENT"),
        shutdownGraceMs: grace,
        leaseMs,
        listen: options.listen ?? deps.env("JOBS_LISTEN") ?? "127.0.0.1:9464",
        token: options.token ?? deps.env("JOBS_TOKEN"),
        ...(publicUrl === undefined ? {} : { publicUrl }),
        stateDir: options.stateDir,
        writeMoved: writeMoved(deps) ?? undefined,
        sessionTimeouts,
        smtp,
      }, deps);
    }),
    deps,
    "daemon",
  );
}

/** What `jobs daemon` was asked to do. */
export interface DaemonOptions {
  db: string;
  config: string;
  /** Queue -> concurrency; default: the file's `queues`, and 10 for any other queue a schedule uses. */
  queues?: Record<string, number>;
  node?: string;
  /** Where this daemon runs; manual schedules state theirs (`runs_where`). */
  environment?: string;
  shutdownGraceMs: number;
  /** How long a claim holds a job without renewal, in ms. @default 30_000 */
  leaseMs?: number;
  /** `host:port` of the health, readiness and metrics endpoint, or `off`. @default "127.0.0.1:9464" */
  listen: string;
  /** Required to listen beyond loopback; every route but /healthz then needs it. */
  token?: string;
  /**
   * Where people reach the daemon, canonical ({@linkcode parsePublicUrl}),
   * and the flag or variable that gave it: stored at start, replacing any
   * stored one. @default the listen address, unless an explicit one is stored
   */
  publicUrl?: GivenPublicUrl;
  /**
   * How long a store call waits for another process's write lock (on
   * PostgreSQL: for any lock another session holds) before it fails (and
   * the daemon backs off and retries), in ms; else `JOBS_BUSY_TIMEOUT`.
   * @default 5000
   */
  busyTimeoutMs?: number;
  /**
   * Where this host's state for the store lives (process-group records under
   * `groups/`); else `JOBS_STATE_DIR`. @default see {@linkcode groupsDirFor}
   */
  stateDir?: string;
  /**
   * Leave to run on a store `jobs migrate-store` retired (`--force-moved`),
   * audited as this actor's; without it such a store is refused at start.
   */
  writeMoved?: { actor: string; reason?: string | null };
  /**
   * How long the web console's sessions live; else `JOBS_CONSOLE_SESSION_IDLE`
   * and `JOBS_CONSOLE_SESSION_ABSOLUTE` (`30m`, `12h`).
   * @default idle 30 min, absolute 12 h
   */
  sessionTimeouts?: SessionTimeouts;
  /** The SMTP server of mailed confirmation codes (`JOBS_SMTP_URL`); null: none. */
  smtp?: SmtpSettings | null;
}

/**
 * The console's session timeouts from `JOBS_CONSOLE_SESSION_IDLE` and
 * `JOBS_CONSOLE_SESSION_ABSOLUTE` (durations: `30m`, `12h`), the defaults
 * for those unset; a value that is no duration fails the command (exit 2).
 */
export function consoleTimeouts(env: (name: string) => string | undefined): SessionTimeouts {
  const read = (name: string, fallback: number): number => {
    const text = env(name);
    if (text === undefined || text === "") return fallback;
    const parsed = tryParseDuration(text);
    if (!parsed.ok || parsed.ms < 1000) {
      throw new CommandFailed(
        `jobs daemon: ${name} "${echo(text)}" is not a duration of at least 1s (30m, 12h)`,
        2,
      );
    }
    return parsed.ms;
  };
  return {
    idleMs: read("JOBS_CONSOLE_SESSION_IDLE", DEFAULT_TIMEOUTS.idleMs),
    absoluteMs: read("JOBS_CONSOLE_SESSION_ABSOLUTE", DEFAULT_TIMEOUTS.absoluteMs),
  };
}

/** What the daemon may touch, chosen by main.ts. */
export interface DaemonDeps {
  clock: Clock;
  logger: Logger;
  env: (name: string) => string | undefined;
  /** Calls `listener` on each delivery of `signal`; returns the unsubscribe. */
  onSignal: (signal: "SIGHUP" | "SIGTERM" | "SIGINT", listener: () => void) => () => void;
  /** Ends the process at once (the second stop signal). */
  exit: (code: number) => never;
}

/** Runs until a stop signal; resolves once shut down. */
export async function runDaemon(options: DaemonOptions, deps: DaemonDeps): Promise<void> {
  const { clock } = deps;
  const busyTimeoutMs = options.busyTimeoutMs ?? busyTimeoutFromEnv(deps.env);
  const registry = new MetricsRegistry();
  const logger = registry.tap(deps.logger);
  let source: ScheduleSource;
  try {
    source = await ScheduleSource.open(options.config, logger);
  } catch (error) {
    throw new CommandFailed(`jobs daemon: ${(error as Error).message}`);
  }
  // deno-lint-ignore no-explicit-any
  let moduleWorkers: Worker<any>[] = [];
  const module = source.config.workersModule;
  if (module !== undefined) {
    try {
      moduleWorkers = await loadWorkersModule(module);
    } catch (error) {
      source.close();
      throw new CommandFailed(`jobs daemon: ${(error as Error).message}`);
    }
  }
  // Every schedule's worker must be one the daemon has; later reloads are checked the same way.
  source.checkWorkers(module, moduleWorkers.map((w) => w.name));
  // A command whose program is not where this daemon would start it is logged (config.warning).
  source.lookForPrograms(hostPrograms(Deno.cwd(), deps.env("PATH")));
  const checked = await source.verify();
  if (!checked.ok) {
    source.close();
    throw new CommandFailed(
      `jobs daemon: ${options.config}: ${checked.errors.length} error(s):\n${
        checked.errors.map((e) => e.message).join("\n")
      }`,
    );
  }
  // Item jobs a fan-out enqueues wake their producers (once the runtime exists).
  const wake = { queues: (_queues: Iterable<string>): void => {} };
  // Command groups are recorded per host and store, shared by every daemon of the store here.
  let groupsDir: string;
  try {
    groupsDir = groupsDirFor({ db: options.db, stateDir: options.stateDir, env: deps.env });
  } catch (error) {
    source.close();
    throw new CommandFailed(`jobs daemon: ${(error as Error).message}`, 2);
  }
  // Its sessions are easy to find in pg_stat_activity (and to terminate).
  const applicationName = options.node === undefined ? "jobs daemon" : `jobs ${options.node}`;
  const openOnce = (): ReturnType<typeof openJobs> =>
    openJobs(options.db, {
      clock,
      logger,
      // A store migrate-store retired is refused (StoreMovedError) unless --force-moved.
      writeMoved: options.writeMoved,
      sqlite: busyTimeoutMs === undefined ? undefined : { busyTimeoutMs },
      // The same bound on PostgreSQL: a write blocked by another session's lock fails after it.
      postgres: { applicationName, lockTimeoutMs: busyTimeoutMs },
      workers: [
        commandWorker({ env: deps.env, clock, groupsDir }),
        httpWorker({ env: deps.env, clock }),
        fanoutWorker({
          store: () => jobs.store,
          workers: () => jobs.registry,
          env: deps.env,
          clock,
          onEnqueued: (queues) => wake.queues(queues),
          groupsDir,
        }),
        // A schedule whose run is a workflow: each occurrence starts one run.
        workflowStartWorker({
          store: () => jobs.store,
          workers: () => jobs.registry,
          clock,
          onEnqueued: (queues) => wake.queues(queues),
        }),
        // A pipeline run (a schedule's `run: { pipeline }`, `jobs ingest`, a replay).
        ingestWorker({
          store: () => jobs.store,
          workers: () => jobs.registry,
          env: deps.env,
          clock,
          logger,
        }),
        // A report run (`jobs report`, `POST /api/v1/reports/<id>/runs`).
        reportWorker({ store: () => jobs.store, env: deps.env, clock, logger }),
        // A bulk retry, cancel or discard from the console (`src/admin/bulk.ts`).
        bulkWorker({ store: () => jobs.store, clock }),
        ...moduleWorkers,
      ].map((worker) => guardEnvironment(worker, options.environment)),
    });
  // A database server that is away (refused, restarting) is waited for, not
  // an exit; a stop signal ends the wait. SQLite's failures are never that.
  const stopWaiting = new AbortController();
  const offWaiting = (["SIGTERM", "SIGINT"] as const)
    .map((signal) => deps.onSignal(signal, () => stopWaiting.abort()));
  const opened = await openWhenReachable(openOnce, {
    clock,
    logger,
    location: describeLocation(options.db),
    signal: stopWaiting.signal,
    dispose: (late) => late.close({ grace: 0 }),
  }).catch((error) => {
    source.close();
    const origin = storeOrigin(options.db, deps);
    throw new CommandFailed(`jobs daemon: ${openFailure(options.db, error, "jobs", origin)}`);
  }).finally(() => offWaiting.forEach((off) => off()));
  if (opened === null) {
    source.close();
    logger("daemon.stopped", { node: options.node ?? null, reason: "stopped while waiting" });
    return;
  }
  const jobs: Awaited<ReturnType<typeof openJobs>> = opened;
  // Each report's output storage, for the pruner's expiry and the downloads.
  const outputs = storageOf(deps.env);
  // Every daemon walks bulk runs, one at a time, whatever the file or --queues say.
  const queues = { ...(options.queues ?? queuesOf(source)) };
  queues[BULK_QUEUE] ??= BULK_CONCURRENCY;
  await applyPausedQueues(jobs.store, clock.now(), source, logger);
  // Before any job is rescued and run again: a SIGKILLed daemon's commands must not overlap it.
  await reapOrphans({ dir: groupsDir, logger, clock });
  const runtime = await jobs.start({
    queues,
    node: options.node,
    environment: options.environment,
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
    // Several daemons share a PostgreSQL database: one of them maintains.
    maintenance: jobs.store.kind === "postgres" ? "leader" : "everywhere",
    schedules: () => source.config.schedules,
    // The file's flow limits, read at each claim: a reload applies from the next.
    flow: () => flowsOf(source.config.queues),
    // The file's `pruner:`, read before each pass: a reload applies from the next one.
    pruneMs: () => prunerSettings(source.config.pruner).everyMs,
    pruner: () => {
      const { batch, retention } = prunerSettings(source.config.pruner);
      const drops = source.config.pipelines.map((p) => ({
        pipeline: p.id,
        retentionMs: p.dropsRetentionMs,
      }));
      const reportOutputs = (now: number, endedBefore: number) =>
        pruneReports({
          store: jobs.store,
          now,
          endedBefore,
          reports: (id) => source.config.reports.find((r) => r.id === id),
          storage: outputs,
          onError: (run, error) =>
            logger("pruner.report_output_failed", {
              level: "error",
              run: run.id,
              report: run.report,
              error: String(error),
            }),
        });
      return { batch, retention, drops, reportOutputs };
    },
  });
  wake.queues = (queues) => runtime.wake(queues);
  /** The URL this daemon listens on, for links while no explicit public URL is stored. */
  let own: string | undefined;
  let http: HttpServer;
  try {
    http = await startHttpServer({
      store: jobs.store,
      listen: options.listen,
      token: options.token,
      logger,
      clock,
      metrics: () => snapshotOf(registry, runtime, clock.now()),
      // The file's queues (a reload's included) and those this daemon runs.
      queues: () => [...new Set([...Object.keys(queuesOf(source)), ...Object.keys(queues)])],
      // The file's pipelines, for their freshness: read again on every scrape.
      pipelines: () => source.config.pipelines,
      // The file's work queues: the console's Work pages, its live feed and
      // /metrics read them on each request and scrape.
      workQueues: () => source.config.workQueues ?? [],
      // What /api/v1 starts runs of, read on each request; a workflow's
      // attempts filled from this daemon's workers, as its scheduled starts are.
      definitions: () => ({
        workflows: (source.config.workflows ?? []).map((w) => withWorkerDefaults(w, jobs.registry)),
        pipelines: source.config.pipelines,
        workQueues: source.config.workQueues,
      }),
      smtp: options.smtp ?? null,
      reports: {
        reports: () => source.config.reports,
        storage: outputs,
        wake: (queues) => runtime.wake(queues),
        publicUrl: async () => (await linkBase(jobs.store, own === undefined ? {} : { own })).url,
      },
      degraded: () => degradedReason(runtime),
      ...(options.sessionTimeouts ? { sessionTimeouts: options.sessionTimeouts } : {}),
    });
  } catch (error) {
    source.close();
    await jobs.close({ grace: 0 });
    throw new CommandFailed(`jobs daemon: ${(error as Error).message}`);
  }
  if (http.addr) own = derivedPublicUrl(http.addr, hostname());
  const publicUrl = await settlePublicUrl(jobs.store, {
    given: options.publicUrl,
    own: own ?? null,
    wildcard: http.addr !== null && isWildcard(http.addr.hostname),
    node: runtime.node,
    now: clock.now(),
  }).catch((error) => {
    logger("daemon.public_url_failed", { level: "error", error: String(error) });
    return { publicUrl: null, publicUrlFrom: `not stored: ${String(error)}` };
  });
  source.watch();
  const unsubscribe = [
    source.onChange(() => {
      Promise.all([
        runtime.reloadSchedules(),
        applyPausedQueues(jobs.store, clock.now(), source, logger),
      ]).catch((error) => logger("config.reload_failed", { error: String(error) }));
    }),
    deps.onSignal("SIGHUP", () => void source.reload()),
  ];
  logger("daemon.started", {
    node: runtime.node,
    db: options.db,
    config: options.config,
    queues,
    schedules: source.config.schedules.length,
    environment: options.environment ?? null,
    listen: http.addr ? `${http.addr.hostname}:${http.addr.port}` : "off",
    ...publicUrl,
  });

  // The first stop signal, or the store's loss (then a signal afterwards is the operator insisting).
  const stopped = new Promise<string>((resolve) => {
    const stop = stopSignals({
      clock,
      stop: resolve,
      exit: (signal) => {
        logger("daemon.exit", { signal, reason: "second signal" });
        deps.exit(1);
      },
      echo: (signal) => logger("daemon.signal_repeated", { signal, within: ECHO_MS }),
    });
    unsubscribe.push(deps.onSignal("SIGTERM", () => stop("SIGTERM")));
    unsubscribe.push(deps.onSignal("SIGINT", () => stop("SIGINT")));
    unsubscribe.push(runtime.health.onLost(() => stop(STORE_LOST)));
  });
  const signal = await stopped;
  if (signal === STORE_LOST) {
    logger("daemon.store_lost", {
      db: options.db,
      error: runtime.health.lost?.message,
      running: runtime.running,
      unrecorded: runtime.unrecorded,
      graceMs: options.shutdownGraceMs,
      note: "the results of running and finished jobs cannot be written anywhere durable; " +
        "running jobs may finish within the grace period, then the daemon exits",
    });
  } else {
    logger("daemon.stopping", {
      signal,
      graceMs: options.shutdownGraceMs,
      running: runtime.running,
    });
  }
  source.close();
  await jobs.close({ grace: options.shutdownGraceMs });
  await http.close();
  for (const off of unsubscribe) off();
  // Lost before or while stopping: the last writes went nowhere, which exit 0 would hide.
  const lost = runtime.health.lost;
  logger("daemon.stopped", { node: runtime.node, ...(lost ? { reason: STORE_LOST } : {}) });
  if (lost) throw new CommandFailed(`jobs daemon: ${lostMessage(options.db, lost)}`);
}

/** A public URL given at start, canonical, and what gave it. */
export interface GivenPublicUrl {
  url: string;
  from: "--public-url" | "JOBS_PUBLIC_URL";
}

/**
 * `--public-url`, else `JOBS_PUBLIC_URL` (empty: not set), canonical; exit
 * 2 naming the flag or variable and the value (redacted) when it is no
 * http or https URL, or holds a user, a query or a fragment.
 */
export function givenPublicUrl(
  flag: string | undefined,
  env: (name: string) => string | undefined,
): GivenPublicUrl | undefined {
  const variable = env("JOBS_PUBLIC_URL");
  const from = flag !== undefined ? "--public-url" : "JOBS_PUBLIC_URL";
  const text = flag ?? (variable === "" ? undefined : variable);
  if (text === undefined) return undefined;
  try {
    return { url: parsePublicUrl(text), from };
  } catch (error) {
    if (!(error instanceof PublicUrlInvalid)) throw error;
    throw new CommandFailed(`jobs daemon: ${from} "${echo(redact(text))}" ${error.message}`, 2);
  }
}

/**
 * Stores the public URL download links are joined to (the given one, else
 * the one the daemon listens on unless an explicit one is stored) and says,
 * for the start log, which applies and why.
 */
async function settlePublicUrl(
  store: Store,
  params: {
    given: GivenPublicUrl | undefined;
    own: string | null;
    /** Whether `own` names this host because the listener takes every interface. */
    wildcard: boolean;
    node: string;
    now: number;
  },
): Promise<{ publicUrl: string | null; publicUrlFrom: string }> {
  const { given, own, node, now } = params;
  if (given !== undefined) {
    await recordPublicUrl(store, {
      url: given.url,
      source: "explicit",
      from: given.from,
      node,
      now,
    });
    return { publicUrl: given.url, publicUrlFrom: given.from };
  }
  if (own !== null) {
    const from = `listen ${new URL(own).host}`;
    const recorded = await recordPublicUrl(store, { url: own, source: "derived", from, node, now });
    if (recorded.outcome === "kept") {
      const kept = recorded.current;
      return {
        publicUrl: kept.url,
        publicUrlFrom: `${kept.from} of node ${kept.node} at ${new Date(kept.at).toISOString()}, ` +
          `kept: a public URL given explicitly is not replaced by the listen address ${own} ` +
          `(start with --public-url to change it)`,
      };
    }
    return {
      publicUrl: own,
      publicUrlFrom: params.wildcard
        ? "the listen address, every interface: this host's name (give --public-url when " +
          "people reach it by another)"
        : "the listen address",
    };
  }
  const stored = await readPublicUrl(store);
  return stored === null
    ? {
      publicUrl: null,
      publicUrlFrom: "none: --listen is off; links need --public-url here or on the daemon " +
        "that serves /downloads/",
    }
    : {
      publicUrl: stored.url,
      publicUrlFrom: `${stored.from} of node ${stored.node}, stored; this daemon does not listen`,
    };
}

/**
 * `worker`, refusing jobs whose `meta.runsWhere` (set by `jobs run` for a
 * manual schedule) names another environment than this daemon's: they are
 * discarded with the reason, so nothing runs against the wrong environment.
 */
function guardEnvironment<A>(worker: Worker<A>, environment: string | undefined): Worker<A> {
  return defineWorker({
    ...worker,
    perform: (args, ctx) => {
      const wanted = ctx.job.meta.runsWhere;
      if (typeof wanted === "string" && wanted !== environment) {
        return {
          discard: `runs_where is "${wanted}" and this daemon's --environment is ${
            environment === undefined ? "not set" : `"${environment}"`
          }`,
        };
      }
      return worker.perform(args, ctx);
    },
  });
}

/**
 * A second stop signal sooner than this after the first is the same
 * keypress delivered twice (Ctrl-C reaches every process of the terminal's
 * group, and `deno task` or `npx` forward it again), not an operator
 * insisting: it is logged and ignored.
 */
export const ECHO_MS = 500;

/**
 * What each stop signal does: the first calls `stop`; a later one calls
 * `exit` (the operator insists), unless it comes within {@linkcode ECHO_MS}
 * of the first, which calls `echo`.
 */
export function stopSignals(params: {
  clock: Clock;
  stop: (signal: string) => void;
  exit: (signal: string) => void;
  echo: (signal: string) => void;
}): (signal: string) => void {
  let first: number | null = null;
  return (signal) => {
    const now = params.clock.now();
    if (first === null) {
      first = now;
      params.stop(signal);
    } else if (now - first < ECHO_MS) params.echo(signal);
    else params.exit(signal);
  };
}

/** The registry's counters plus what the runtime knows (store health, planner lag, leader). */
export function snapshotOf(
  registry: MetricsRegistry,
  runtime: Runtime,
  now: number,
): MetricsSnapshot {
  return {
    ...registry.snapshot(),
    storeErrors: runtime.health.errors().map((e) => ({ source: e.source, value: e.count })),
    storeDegraded: runtime.health.degraded,
    unrecorded: runtime.unrecorded,
    plannerLagSeconds: runtime.plannerLagMs(now) / 1000,
    leader: { node: runtime.node, leader: runtime.maintaining },
  };
}

/** `/readyz`'s reason while the runtime's store calls fail, else null. */
export function degradedReason(runtime: Runtime): string | null {
  const status = runtime.health.status();
  if (status.ok) return null;
  if (status.lost) return `${status.error}; the daemon is stopping`;
  return `store calls failing since ${new Date(status.since).toISOString()} ` +
    `(${status.source}: ${status.error})`;
}

/** What the daemon's stop is waiting for when the store was lost rather than a signal sent. */
const STORE_LOST = "store lost";

/** The daemon's last line after its store's file was deleted or replaced under it. */
function lostMessage(db: string, lost: StoreLostError): string {
  const where = `"${escapeControl(db)}"`;
  return lost.replaced
    ? `the database file ${where} was replaced while the daemon ran (${lost.change}); its last ` +
      `writes are lost; restart the daemon to use the file now at that path`
    : `the database file ${where} was deleted while the daemon ran; its last writes are ` +
      `lost; restart the daemon to create a new one`;
}

/** `JOBS_BUSY_TIMEOUT` in ms, or undefined when unset; exit 2 naming the value when not a number. */
function busyTimeoutFromEnv(env: (name: string) => string | undefined): number | undefined {
  const text = env("JOBS_BUSY_TIMEOUT");
  if (text === undefined || text === "") return undefined;
  const ms = Number(text);
  if (!Number.isInteger(ms) || ms < 0) {
    throw new CommandFailed(
      `jobs daemon: JOBS_BUSY_TIMEOUT "${text}" is not a whole number of ms`,
      2,
    );
  }
  return ms;
}

/**
 * A queue the file declares `paused: true` is paused (for every process on
 * the store) when the daemon starts and whenever the file changes;
 * `paused: false` leaves the stored state alone, so an operator's pause
 * stands until an operator resumes.
 */
async function applyPausedQueues(
  store: Store,
  now: number,
  source: ScheduleSource,
  logger: Logger,
): Promise<void> {
  for (const [name, queue] of Object.entries(source.config.queues)) {
    if (!queue.paused) continue;
    await store.queuePause({ name, paused: true, now });
    logger("queue.paused", { queue: name, by: "schedules.yaml" });
  }
}

/** How many pipeline runs a daemon runs at once on a queue the file gives no concurrency. */
export const INGEST_CONCURRENCY = 2;
/** Bulk runs at once on a node: one (each walks its snapshot in chunks of its own). */
export const BULK_CONCURRENCY = 1;
/** Report runs at once on a node unless `queues:` says otherwise (each holds a connection and a thread). */
export const REPORT_CONCURRENCY = 2;

/** The file's queues, plus every queue a schedule names, at concurrency 10 unless declared. */
/** The flow limits the file declares, by queue (cached per `queues:` object: read at each claim). */
function flowsOf(queues: ScheduleConfig["queues"]): Record<string, FlowLimits> {
  let flows = FLOWS.get(queues);
  if (flows === undefined) {
    flows = {};
    for (const [name, q] of Object.entries(queues)) if (q.flow) flows[name] = q.flow;
    FLOWS.set(queues, flows);
  }
  return flows;
}
const FLOWS = new WeakMap<ScheduleConfig["queues"], Record<string, FlowLimits>>();

function queuesOf(
  source: {
    config: {
      queues: Record<string, { concurrency: number }>;
      schedules: readonly Schedule[];
      pipelines?: readonly CompiledPipeline[];
      reports?: readonly { id: string }[];
    };
  },
): Record<string, number> {
  const queues: Record<string, number> = {};
  for (const [name, q] of Object.entries(source.config.queues)) queues[name] = q.concurrency;
  for (const s of source.config.schedules) queues[s.queue] ??= 10;
  // A pipeline run holds its commands and a buffer: two at a time unless the file says.
  for (const p of source.config.pipelines ?? []) queues[p.queue] ??= INGEST_CONCURRENCY;
  if ((source.config.reports ?? []).length > 0) queues[REPORT_QUEUE] ??= REPORT_CONCURRENCY;
  if (Object.keys(queues).length === 0) queues.default = 10;
  return queues;
}

/** `--queues a:4,b:1` -> `{ a: 4, b: 1 }`; throws naming the bad entry. */
export function parseQueues(text: string): Record<string, number> {
  const queues: Record<string, number> = {};
  for (const entry of text.split(",").map((e) => e.trim()).filter(Boolean)) {
    const match = /^([A-Za-z0-9][\w.:/-]*):(\d+)$/.exec(entry);
    const concurrency = match ? Number(match[2]) : NaN;
    if (!match || !Number.isInteger(concurrency) || concurrency < 1) {
      throw new Error(`"${entry}" is not name:concurrency with a concurrency of at least 1`);
    }
    queues[match[1]!] = concurrency;
  }
  if (Object.keys(queues).length === 0) throw new Error(`"${text}" names no queue`);
  return queues;
}
