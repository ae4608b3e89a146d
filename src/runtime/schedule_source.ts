/**
 * The schedules a running process plans from: loaded from `schedules.yaml`,
 * reloaded when the file changes (watched with `stat`) or when asked (SIGHUP in the
 * daemon), and never replaced by a file with errors: the last good
 * configuration stays, and why is logged.
 *
 * @module
 */

import {
  type ConfigError,
  type LoadOptions,
  loadSchedules,
  type ProgramFiles,
} from "../config/load.ts";
import type { ScheduleConfig } from "../config/types.ts";
import type { Logger } from "../kernel/logger.ts";

/** What a reload did. */
export type ReloadResult =
  | { ok: true; changed: boolean; config: ScheduleConfig }
  | { ok: false; errors: ConfigError[] };

/** A `schedules.yaml` kept loaded. */
export class ScheduleSource {
  readonly path: string;
  #logger: Logger;
  #config: ScheduleConfig;
  #text: string;
  /** The last reload was refused: the next good one is logged even if it equals the kept one. */
  #rejected = false;
  #listeners = new Set<(config: ScheduleConfig) => void>();
  #timer: ReturnType<typeof setInterval> | null = null;
  #load: LoadOptions = {};

  private constructor(path: string, config: ScheduleConfig, text: string, logger: Logger) {
    this.path = path;
    this.#config = config;
    this.#text = text;
    this.#logger = logger;
  }

  /** Loads the file; fails with every error when the first load is invalid (nothing to fall back on). */
  static async open(path: string, logger: Logger): Promise<ScheduleSource> {
    const result = await loadSchedules(path);
    if (!result.ok) {
      throw new Error(
        `${path}: ${result.errors.length} error(s):\n${
          result.errors.map((e) => e.message).join("\n")
        }`,
      );
    }
    return new ScheduleSource(path, result.config, await readText(path), logger);
  }

  /**
   * From now on, checks every schedule's worker against these (the daemon's
   * loaded `workers:` module): a reload naming an unknown worker, or another
   * module than the one loaded (which needs a restart), is refused like any
   * other error.
   */
  checkWorkers(module: string | undefined, names: readonly string[]): void {
    this.#load = {
      ...this.#load,
      workers: (path) =>
        path === module ? Promise.resolve(names) : Promise.reject(
          new Error(
            module === undefined
              ? `no workers module was loaded at start; restart the daemon to load "${path}"`
              : `the daemon loaded "${module}" at start; restart it to load "${path}"`,
          ),
        ),
    };
  }

  /**
   * From now on, looks for the program of every command of each good file
   * where this process would start it, and logs `config.warning` for each
   * one missing or not executable (`jobs check` prints the same): the file
   * is still used, since only the jobs that run that command will fail.
   */
  lookForPrograms(files: ProgramFiles): void {
    this.#load = { ...this.#load, programs: files };
  }

  /** The last good configuration. */
  get config(): ScheduleConfig {
    return this.#config;
  }

  /** Calls `listener` with each new good configuration. */
  onChange(listener: (config: ScheduleConfig) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Reads the file again. A valid file replaces the configuration (listeners
   * are told when it changed); a file with errors is refused, the last good
   * configuration stays, and each error is logged.
   *
   * Every reload logs one line, so the last line of a log says where things
   * stand: `config.rejected`, `config.reloaded` (a change, or a good file
   * after a refused one, even when it equals the configuration kept), or
   * `config.unchanged`.
   */
  async reload(): Promise<ReloadResult> {
    return await this.#reload(true);
  }

  /**
   * Loads the file again with the checks set since it was opened (the
   * daemon's workers), like {@linkcode ScheduleSource.reload} but logging
   * nothing: the daemon's start, which reports a refusal itself.
   */
  async verify(): Promise<ReloadResult> {
    return await this.#reload(false);
  }

  async #reload(log: boolean): Promise<ReloadResult> {
    const result = await loadSchedules(this.path, this.#load);
    if (result.ok) {
      for (const warning of result.warnings) {
        this.#logger("config.warning", {
          file: this.path,
          code: warning.code,
          warning: warning.message,
        });
      }
    }
    if (!log) {
      if (result.ok) this.#config = result.config;
      return result.ok
        ? { ok: true, changed: false, config: result.config }
        : { ok: false, errors: result.errors };
    }
    if (!result.ok) {
      this.#logger("config.rejected", {
        file: this.path,
        errors: result.errors.map((e) => e.message),
        keeping: `the last good configuration (${this.#config.schedules.length} schedules)`,
      });
      this.#rejected = true;
      return { ok: false, errors: result.errors };
    }
    const text = await readText(this.path).catch(() => "");
    const changed = text !== this.#text;
    const afterRejected = this.#rejected;
    this.#text = text;
    this.#config = result.config;
    this.#rejected = false;
    if (changed || afterRejected) {
      this.#logger("config.reloaded", {
        file: this.path,
        schedules: result.config.schedules.length,
        ...(changed ? {} : { note: "the file is valid again and equals the configuration kept" }),
      });
    } else {
      this.#logger("config.unchanged", {
        file: this.path,
        schedules: result.config.schedules.length,
      });
    }
    if (changed) { for (const listener of this.#listeners) listener(result.config); }
    return { ok: true, changed, config: result.config };
  }

  /**
   * Reloads whenever the file changes on disk, until
   * {@linkcode ScheduleSource.close}: every `intervalMs` it compares the
   * file's inode, size and change times (a `stat`, which opens nothing), so
   * a save in place, a save by renaming a new file over the old one, and a
   * delete-then-create are all seen.
   *
   * Not `Deno.watchFs`: Deno opens and closes each changed file of a watched
   * folder, and closing any descriptor of a file drops every POSIX lock the
   * process holds on it. With `jobs.db` beside `schedules.yaml`, SQLite's
   * locks vanished and the next process to close the database deleted the
   * running daemon's WAL.
   */
  watch(
    options: {
      /** How often the file is looked at, in ms. @default 1000 */
      intervalMs?: number;
    } = {},
  ): void {
    if (this.#timer !== null) return;
    const intervalMs = options.intervalMs ?? 1000;
    let seen = fileSignature(this.path);
    let busy = false;
    // Real time on purpose: this only notices edits, it decides nothing.
    this.#timer = setInterval(async () => {
      if (busy) return;
      busy = true;
      try {
        const now = fileSignature(this.path);
        const changed = now !== seen;
        seen = now;
        if (changed && now !== "missing") await this.reload();
      } catch (error) {
        this.#logger("config.watch_failed", { file: this.path, error: String(error) });
      } finally {
        busy = false;
      }
    }, intervalMs);
  }

  /** Stops watching. */
  close(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#listeners.clear();
  }
}

/**
 * What changes when the file is saved, in place or by rename; `missing`
 * while it is not there, `unreadable: ...` when it cannot be looked at.
 */
function fileSignature(path: string): string {
  try {
    const info = Deno.statSync(path);
    return [info.ino, info.size, info.mtime?.getTime(), info.ctime?.getTime()].join(":");
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return "missing";
    return `unreadable: ${String(error)}`;
  }
}

function readText(path: string): Promise<string> {
  return Deno.readTextFile(path);
}
