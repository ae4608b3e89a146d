/**
 * The `workers:` module of `schedules.yaml`: a TypeScript (or JavaScript)
 * module whose exports are workers made with `defineWorker` (from
 * `src/mod.ts`), which the daemon registers beside its own runners.
 *
 * ```ts ignore
 * import { defineWorker } from "jobs/src/mod.ts";
 *
 * export const reindex = defineWorker<{ item: string }>({
 *   name: "reindex",
 *   perform: async ({ item }) => { ... },
 * });
 * export default [cleanup, report]; // a list of workers, or one worker
 * ```
 *
 * Every export must be a worker (the default export may also be a list of
 * workers); the same worker exported twice counts once, two workers with
 * one name are refused, and so are names under `jobs.`, which the daemon's
 * runners use. Type-only exports leave nothing at run time and are fine.
 *
 * Importing runs the module's top-level code with the process's
 * permissions: it is code the operator chose, like the commands of
 * `schedules.yaml`.
 *
 * @module
 */

import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { defineWorker, type Worker } from "../kernel/worker.ts";

/** Worker names under this prefix belong to the daemon's runners (`jobs.command`, `jobs.http`, `jobs.fanout`). */
export const RESERVED_PREFIX = "jobs.";

/** Why a workers module was refused; `reason` leaves out the file, which `path` holds. */
export class WorkersModuleError extends Error {
  constructor(readonly path: string, readonly reason: string, options?: ErrorOptions) {
    super(`workers module ${JSON.stringify(path)}: ${reason}`, options);
    this.name = "WorkersModuleError";
  }
}

/**
 * Imports the module at `path` (relative to the working directory, or
 * absolute) and returns its workers, default export first, then the named
 * exports in name order.
 *
 * @throws {WorkersModuleError} when it cannot be imported, exports
 *   something other than a worker, or two workers share a name
 */
// deno-lint-ignore no-explicit-any
export async function loadWorkersModule(path: string): Promise<Worker<any>[]> {
  const file = isAbsolute(path) ? path : resolve(path);
  let exports: Record<string, unknown>;
  try {
    exports = await import(pathToFileURL(file).href);
  } catch (error) {
    throw new WorkersModuleError(path, `cannot be imported: ${firstLine(error)}`, {
      cause: error,
    });
  }
  return workersOf(exports, path);
}

/** The names of the workers of the module at `path`: the loader `jobs check` gives `loadSchedules`. */
export async function workerNames(path: string): Promise<string[]> {
  return (await loadWorkersModule(path)).map((worker) => worker.name);
}

/** The workers among a module's exports; see {@linkcode loadWorkersModule}. */
// deno-lint-ignore no-explicit-any
export function workersOf(exports: Record<string, unknown>, path: string): Worker<any>[] {
  const found: { worker: unknown; from: string }[] = [];
  const names = Object.keys(exports).filter((name) => name !== "default").sort();
  if ("default" in exports) {
    const value = exports.default;
    if (Array.isArray(value)) {
      value.forEach((worker, i) => found.push({ worker, from: `export default[${i}]` }));
    } else found.push({ worker: value, from: "export default" });
  }
  for (const name of names) found.push({ worker: exports[name], from: `export "${name}"` });

  // deno-lint-ignore no-explicit-any
  const byName = new Map<string, { worker: Worker<any>; from: string }>();
  for (const { worker, from } of found) {
    const checked = checkWorker(worker, from, path);
    const seen = byName.get(checked.name);
    if (seen?.worker === worker) continue;
    if (seen) {
      throw new WorkersModuleError(
        path,
        `${from} and ${seen.from} are both named "${checked.name}"; worker names must be unique`,
      );
    }
    byName.set(checked.name, { worker: worker as typeof checked, from });
  }
  if (byName.size === 0) {
    throw new WorkersModuleError(path, "exports no worker (export workers made with defineWorker)");
  }
  return [...byName.values()].map((entry) => entry.worker);
}

/**
 * A worker as `defineWorker` returns it (frozen, with its defaults filled
 * in), checked again so that a worker built by another copy of the library
 * meets the same rules; else an error naming the export and what it is.
 */
// deno-lint-ignore no-explicit-any
function checkWorker(value: unknown, from: string, path: string): Worker<any> {
  const candidate = value as Partial<Worker> | null;
  const defined = typeof value === "object" && value !== null && Object.isFrozen(value) &&
    typeof candidate?.name === "string" && typeof candidate.perform === "function" &&
    typeof candidate.queue === "string" && typeof candidate.maxAttempts === "number";
  if (!defined) {
    throw new WorkersModuleError(
      path,
      `${from} is ${describe(value)}, not a worker (make it with defineWorker)`,
    );
  }
  try {
    defineWorker(candidate as Worker);
  } catch (error) {
    throw new WorkersModuleError(path, `${from}: ${firstLine(error)}`, { cause: error });
  }
  if (candidate.name!.startsWith(RESERVED_PREFIX)) {
    throw new WorkersModuleError(
      path,
      `${from} is named "${candidate.name}"; names under "${RESERVED_PREFIX}" belong to the daemon`,
    );
  }
  return candidate as Worker;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "function") return "a function";
  if (typeof value === "object") return "an object";
  const text = JSON.stringify(value) ?? String(value);
  return `${typeof value} ${text.length > 40 ? `${text.slice(0, 40)}…` : text}`;
}

/** The first line of an error's message: import errors append stack-like detail. */
function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const line = text.split("\n").map((l) => l.trim()).find((l) => l !== "") ?? "unknown error";
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}
