/**
 * The programs a file's commands start, checked where they would run: the
 * first argv word of every `command` without `shell: true` (a schedule's
 * `run` and `selection`, a use case, a workflow step's `run`, a pipeline's
 * `source`, steps, `sink` and `notify`). One that is not there, or not
 * executable, is a warning (`command-missing`, `command-not-executable`),
 * not an error: the file may be checked on another host than the one that
 * runs it, and a program may be installed after the check. Without the
 * warning, the file passes and every attempt of the job fails.
 *
 * Where a program is looked for is where the command runner would start
 * it: a path with a slash against the command's `cwd` when it gives one (a
 * relative `cwd` is the daemon's working directory's), else against the
 * schedules file's folder for a pipeline's commands (they run there), else
 * against the daemon's working directory, which a schedule's or use case's
 * command runs in; a bare name in the folders of `PATH`. The daemon's
 * working directory and `PATH` are the checking process's own (a daemon
 * started where `jobs check` runs sees the same), given as
 * {@linkcode ProgramFiles} so that the check itself reads no file.
 *
 * @module
 */

import { dirname, isAbsolute, resolve } from "node:path";
import { ITEM_PLACEHOLDER } from "../schedule/types.ts";
import { fieldName, type Path, quote, type Reporter } from "./report.ts";

/** What the check asks of the host: where commands run, and what is at a path. */
export interface ProgramFiles {
  /** The working directory a daemon would run a command without `cwd` in. */
  cwd: string;
  /** The `PATH` a daemon would look bare program names up in. */
  path: string;
  /** What is at `file` (absolute), following links; null when nothing is. */
  stat(file: string): { isFile: boolean; executable: boolean } | null;
}

/** Where a command without its own `cwd` runs. */
type Base = "daemon" | "file";

/** Records a warning for each command whose program is missing or not executable. */
export function checkPrograms(report: Reporter, files: ProgramFiles): void {
  const root = fields(report.raw) ?? {};
  for (const [index, schedule] of list(root.schedules).entries()) {
    const s = fields(schedule) ?? {};
    checkCommand(report, files, ["schedules", index, "run"], s.run, "daemon");
    checkCommand(report, files, ["schedules", index, "selection"], s.selection, "daemon");
  }
  for (const [id, useCase] of Object.entries(fields(root.use_cases) ?? {})) {
    checkCommand(report, files, ["use_cases", id], useCase, "daemon");
  }
  for (const [index, workflow] of list(root.workflows).entries()) {
    for (const [i, step] of list(fields(workflow)?.steps).entries()) {
      const path = ["workflows", index, "steps", i, "run"];
      checkCommand(report, files, path, fields(step)?.run, "daemon");
    }
  }
  for (const [index, pipeline] of list(root.pipelines).entries()) {
    const p = fields(pipeline) ?? {};
    const path = ["pipelines", index];
    for (const [i, step] of list(p.steps).entries()) {
      checkCommand(report, files, [...path, "steps", i, "run"], fields(step)?.run, "file");
    }
    for (const key of ["source", "sink", "notify"]) {
      checkCommand(report, files, [...path, key], p[key], "file");
    }
  }
}

/** The warning, if any, for the command of the run at `path`. */
function checkCommand(
  report: Reporter,
  files: ProgramFiles,
  path: Path,
  value: unknown,
  base: Base,
): void {
  const run = fields(value);
  if (!run || run.shell === true || !Array.isArray(run.command)) return;
  const program = run.command[0];
  // A fan-out item in the program's place is known only when the selection runs.
  if (typeof program !== "string" || program === "" || program.includes(ITEM_PLACEHOLDER)) return;
  const at = [...path, "command", 0];
  const field = fieldName(report.where(at)[1]);
  const problem = program.includes("/")
    ? fileProblem(files, program, run.cwd, base, report.file)
    : pathProblem(files, program);
  if (problem) report.warn(problem.code, at, `${field} ${quote(program)} ${problem.text}`);
}

/** A program given as a path: what is wrong with the file it names. */
function fileProblem(
  files: ProgramFiles,
  program: string,
  cwd: unknown,
  base: Base,
  file: string,
): Problem | null {
  const own = typeof cwd === "string" && cwd !== "";
  const folder = own
    ? resolve(files.cwd, cwd)
    : base === "file"
    ? resolve(files.cwd, dirname(file))
    : files.cwd;
  const target = isAbsolute(program) ? program : resolve(folder, program);
  const relative = isAbsolute(program)
    ? ""
    : own
    ? ` (relative to its cwd)`
    : base === "file"
    ? ` (relative to the schedules file's folder, where the pipeline runs it)`
    : ` (a command without cwd runs in the daemon's working directory, here the current folder)`;
  const found = files.stat(target);
  if (!found) {
    const hint = !own && base === "daemon" ? besideFile(files, program, file, target) : "";
    return { code: "command-missing", text: `does not exist: no file ${target}${relative}${hint}` };
  }
  if (!found.isFile) {
    return { code: "command-not-executable", text: `is not a file: ${target}${relative}` };
  }
  if (!found.executable) {
    return {
      code: "command-not-executable",
      text: `is not executable: ${target} has no execute permission${relative}`,
    };
  }
  return null;
}

/**
 * For a relative program that runs in the daemon's working directory: the
 * hint that the schedules file's folder has it, so the daemon should start
 * there (or the command name a cwd). Empty when it does not.
 */
function besideFile(files: ProgramFiles, program: string, file: string, target: string): string {
  const folder = resolve(files.cwd, dirname(file));
  const there = resolve(folder, program);
  if (there === target || !files.stat(there)?.isFile) return "";
  return `; ${there} exists: start the daemon in ${folder}, or give the command a cwd`;
}

/** A bare program name: missing unless a folder of PATH holds an executable file of that name. */
function pathProblem(files: ProgramFiles, program: string): Problem | null {
  for (const folder of files.path.split(":")) {
    const found = files.stat(resolve(files.cwd, folder === "" ? "." : folder, program));
    if (found?.isFile && found.executable) return null;
  }
  return { code: "command-missing", text: "is not on PATH" };
}

interface Problem {
  code: "command-missing" | "command-not-executable";
  text: string;
}

type Fields = Record<string, unknown>;

function fields(value: unknown): Fields | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Fields
    : undefined;
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
