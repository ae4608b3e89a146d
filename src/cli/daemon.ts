/**
 * `jobs daemon`: runs the schedules of `schedules.yaml` and the queued work
 * on the store until stopped. It plans occurrences, runs them with the
 * command, HTTP and TypeScript-worker runners, picks up edits of the file
 * (on save, and on SIGHUP), and on SIGTERM or SIGINT shuts down in order; a
 * second signal exits at once.
 *
 * It serves /healthz, /readyz and /metrics on `--listen` (loopback unless a
 * token is given). The workers module and fan-out come with the rest of its
 * issue.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { openJobs } from "../jobs.ts";
import { commandWorker } from "../runners/command.ts";
import { httpWorker } from "../runners/http.ts";
import type { Schedule } from "../schedule/types.ts";
import type { Store } from "../store/store.ts";
import type { Logger } from "../worker/logger.ts";
import { ScheduleSource } from "../worker/schedule_source.ts";
import { type HttpServer, startHttpServer } from "../http/server.ts";
import { CommandFailed } from "./program.ts";

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
  /** `host:port` of the health, readiness and metrics endpoint, or `off`. @default "127.0.0.1:9464" */
  listen: string;
  /** Required to listen beyond loopback; every route but /healthz then needs it. */
  token?: string;
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
  const { clock, logger } = deps;
  let source: ScheduleSource;
  try {
    source = await ScheduleSource.open(options.config, logger);
  } catch (error) {
    throw new CommandFailed(`jobs daemon: ${(error as Error).message}`);
  }
  const jobs = await openJobs(options.db, {
    clock,
    logger,
    workers: [
      commandWorker({ env: deps.env, clock }),
      httpWorker({ env: deps.env, clock }),
    ],
  });
  const queues = options.queues ?? queuesOf(source);
  await applyPausedQueues(jobs.store, clock.now(), source, logger);
  const runtime = await jobs.start({
    queues,
    node: options.node,
    schedules: () => source.config.schedules,
  });
  let http: HttpServer;
  try {
    http = await startHttpServer({
      store: jobs.store,
      listen: options.listen,
      token: options.token,
      logger,
      clock,
    });
  } catch (error) {
    source.close();
    await jobs.close({ grace: 0 });
    throw new CommandFailed(`jobs daemon: ${(error as Error).message}`);
  }
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
  });

  let stopping = false;
  const stopped = new Promise<string>((resolve) => {
    const stop = (signal: string) => () => {
      if (stopping) {
        logger("daemon.exit", { signal, reason: "second signal" });
        deps.exit(1);
      }
      stopping = true;
      resolve(signal);
    };
    unsubscribe.push(deps.onSignal("SIGTERM", stop("SIGTERM")));
    unsubscribe.push(deps.onSignal("SIGINT", stop("SIGINT")));
  });
  const signal = await stopped;
  logger("daemon.stopping", { signal, graceMs: options.shutdownGraceMs, running: runtime.running });
  source.close();
  await jobs.close({ grace: options.shutdownGraceMs });
  await http.close();
  for (const off of unsubscribe) off();
  logger("daemon.stopped", { node: runtime.node });
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

/** The file's queues, plus every queue a schedule names, at concurrency 10 unless declared. */
export function queuesOf(
  source: {
    config: { queues: Record<string, { concurrency: number }>; schedules: readonly Schedule[] };
  },
): Record<string, number> {
  const queues: Record<string, number> = {};
  for (const [name, q] of Object.entries(source.config.queues)) queues[name] = q.concurrency;
  for (const s of source.config.schedules) queues[s.queue] ??= 10;
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
