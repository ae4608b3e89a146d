/** Runs the `jobs` command line in-process, as main.ts would, with captured output. */

import { runCli } from "../../src/cli/program.ts";
import { FakeClock } from "../../src/clock.ts";
import type { NewJob } from "../../src/kernel/types.ts";
import { silentLogger } from "../../src/kernel/logger.ts";
import { newJob } from "./backends.ts";
import { tempDir, withStore } from "./stores.ts";

/** The exit code and the captured stdout and stderr of one command line. */
export async function runJobs(
  args: string[],
  options: {
    now: number;
    env?: Record<string, string>;
    /** The answer to every confirmation question (default: no). */
    confirm?: boolean;
    /** The OS user main.ts would find by uid (default: `$USER` of `env`, else "tester"). */
    osUser?: string;
    /** What standard input holds (default: nothing). */
    stdin?: string;
    /**
     * The answers typed at a terminal to each secret's prompt, in order
     * (default: no terminal: the secret is read from stdin).
     */
    typed?: string[];
    /** The current folder, where the project file is looked for (default: the process's). */
    cwd?: string;
    /** The name errors start with, as main.ts finds it (default: `jobs`). */
    name?: string;
  },
): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const env = options.env ?? {};
  const typed = options.typed ? [...options.typed] : null;
  const code = await runCli(args, {
    clock: new FakeClock(options.now),
    logger: silentLogger,
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    env: (name) => env[name],
    color: false,
    program: "jobsctl",
    osUser: () => options.osUser ?? env.USER ?? env.LOGNAME ?? "tester",
    demo: () => Promise.resolve(),
    onSignal: () => () => {},
    confirm: (question) => {
      out.push(`${question} [y/N]`);
      return Promise.resolve(options.confirm ?? false);
    },
    exit: (code) => {
      throw new Error(`exit ${code}`);
    },
    readStdin: () => Promise.resolve(options.stdin ?? ""),
    readSecret: (prompt) => {
      if (typed === null) return Promise.resolve(null);
      err.push(prompt);
      return Promise.resolve(typed.shift() ?? "");
    },
    ...(options.cwd === undefined ? {} : { cwd: () => options.cwd! }),
    ...(options.name === undefined ? {} : { name: options.name }),
  });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

/** A temp folder with `schedules.yaml` holding `schedules`; `db` is a path in it (not created). */
export interface CliFiles {
  dir: string;
  db: string;
  config: string;
}

/** Runs `fn` with a temp folder holding `schedules.yaml` (see {@linkcode CliFiles}), then removes it. */
export async function withFiles(
  schedules: string,
  fn: (files: CliFiles) => Promise<void>,
): Promise<void> {
  const dir = await tempDir();
  try {
    const config = `${dir.path}/schedules.yaml`;
    await Deno.writeTextFile(config, schedules);
    await fn({ dir: dir.path, db: `${dir.path}/jobs.db`, config });
  } finally {
    await dir.cleanup();
  }
}

/**
 * Inserts jobs (due a minute before `now`) into the store at `db`, creating
 * it; claims the first `claim` of each queue on node-a and completes the
 * first `complete` claimed. Returns the ids, in order.
 */
export async function seedJobs(
  db: string,
  now: number,
  jobs: Partial<NewJob>[],
  steps: { claim?: number; complete?: number } = {},
): Promise<number[]> {
  return await withStore(db, async (store) => {
    const ids = (await store.jobsInsert({
      jobs: jobs.map((fields) => newJob({ scheduledAt: now - 60_000, ...fields })),
      now: now - 60_000,
    })).map((r) => r.id);
    const claimed = [];
    for (const queue of new Set(jobs.map((j) => j.queue ?? "default"))) {
      const { jobs: got } = await store.jobsClaim({
        queue,
        node: "node-a",
        limit: steps.claim ?? 0,
        now: now - 50_000,
        leaseMs: 3_600_000,
      });
      claimed.push(...got);
    }
    await store.jobsRecord({
      node: "node-a",
      now: now - 40_000,
      results: claimed.slice(0, steps.complete ?? 0).map((job) => ({
        id: job.id,
        fence: job.fence,
        attempt: job.attempt,
        startedAt: job.attemptedAt,
        outcome: "completed" as const,
      })),
    });
    return ids;
  });
}
