/**
 * The schedules a running process plans from: loaded from `schedules.yaml`,
 * reloaded when the file changes (a file watch) or when asked (SIGHUP in the
 * daemon), and never replaced by a file with errors: the last good
 * configuration stays, and why is logged.
 *
 * @module
 */

import { dirname, resolve } from "node:path";
import { type ConfigError, loadSchedules } from "../schedule/config.ts";
import type { ScheduleConfig } from "../schedule/types.ts";
import type { Logger } from "./logger.ts";

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
  #listeners = new Set<(config: ScheduleConfig) => void>();
  #watcher: Deno.FsWatcher | null = null;

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
   */
  async reload(): Promise<ReloadResult> {
    const result = await loadSchedules(this.path);
    if (!result.ok) {
      this.#logger("config.rejected", {
        file: this.path,
        errors: result.errors.map((e) => e.message),
        keeping: `the last good configuration (${this.#config.schedules.length} schedules)`,
      });
      return { ok: false, errors: result.errors };
    }
    const text = await readText(this.path).catch(() => "");
    const changed = text !== this.#text;
    this.#text = text;
    this.#config = result.config;
    if (changed) {
      this.#logger("config.reloaded", {
        file: this.path,
        schedules: result.config.schedules.length,
      });
      for (const listener of this.#listeners) listener(result.config);
    }
    return { ok: true, changed, config: result.config };
  }

  /** Reloads whenever the file changes on disk, until {@linkcode ScheduleSource.close}. */
  watch(): void {
    if (this.#watcher) return;
    // The folder, not the file: editors save by writing a new file and
    // renaming it over the old one, which a watch on the old inode misses.
    const file = resolve(this.path);
    this.#watcher = Deno.watchFs(dirname(file), { recursive: false });
    const watcher = this.#watcher;
    (async () => {
      try {
        for await (const event of watcher) {
          if (event.kind === "access" || !event.paths.some((p) => resolve(p) === file)) continue;
          await this.reload();
        }
      } catch (error) {
        this.#logger("config.watch_failed", { file: this.path, error: String(error) });
      }
    })();
  }

  /** Stops watching. */
  close(): void {
    this.#watcher?.close();
    this.#watcher = null;
    this.#listeners.clear();
  }
}

function readText(path: string): Promise<string> {
  return Deno.readTextFile(path);
}
