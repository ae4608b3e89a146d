/**
 * Long-lived command steps and sinks: one process per step per run
 * attempt, fed NDJSON records on stdin and answering one line per record,
 * in order. A chunk is written while its answers are read (stdout is pumped
 * all along), so neither side can fill a pipe and wait on the other.
 *
 * A process that exits, or answers a line that is not one of the protocol's,
 * fails the attempt with the tail of its stderr (redacted). The process
 * leads its own group; the group is killed at the end of the run, on abort,
 * and on unload.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { JobFailure } from "../kernel/error_text.ts";
import { redact } from "../kernel/redact.ts";
import { ERROR_STDERR_BYTES, OutputTail } from "../process/output.ts";
import { expandVariables } from "../process/env.ts";
import { killOnExit, pump, releaseOnExit, signalGroup, within } from "../process/process_group.ts";
import { STDERR_MARK } from "../text/stored_error.ts";
import type { ProcessorRun } from "./types.ts";

type CommandSpec = Extract<ProcessorRun, { kind: "command" }>;

const NEWLINE = 0x0a;

/** One running command step or sink. */
export class LineProcess {
  readonly label: string;
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #stderr = new OutputTail(ERROR_STDERR_BYTES);
  readonly #clock: Clock;
  readonly #killGraceMs: number;
  readonly #decoder = new TextDecoder();
  readonly #encoder = new TextEncoder();
  #lines: string[] = [];
  #carry = "";
  #wanted = 0;
  #wake: (() => void) | null = null;
  #exited: Deno.CommandStatus | null = null;
  #closed = false;

  constructor(
    spec: CommandSpec,
    env: Record<string, string>,
    options: {
      label: string;
      clock: Clock;
      killGraceMs: number;
      daemonEnv: (n: string) => string | undefined;
    },
  ) {
    this.label = options.label;
    this.#clock = options.clock;
    this.#killGraceMs = options.killGraceMs;
    const full: Record<string, string> = {};
    for (const [name, value] of Object.entries(spec.env ?? {})) {
      full[name] = expandVariables(value, options.daemonEnv, `${options.label} env "${name}"`);
    }
    Object.assign(full, env);
    const [program, ...args] = spec.shell ? ["/bin/sh", "-c", spec.argv[0]!] : spec.argv;
    try {
      this.#child = new Deno.Command(program!, {
        args,
        cwd: spec.cwd,
        env: full,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
        detached: true,
      }).spawn();
    } catch (error) {
      throw new JobFailure(`${this.label} cannot start: ${(error as Error).message}`);
    }
    killOnExit(this.#child.pid);
    this.#writer = this.#child.stdin.getWriter();
    pump(this.#child.stdout.getReader(), (chunk) => this.#onStdout(chunk)).catch(() => {});
    pump(this.#child.stderr.getReader(), (chunk) => this.#stderr.push(chunk)).catch(() => {});
    this.#child.status.then((status) => {
      this.#exited = status;
      this.#wake?.();
    });
  }

  #onStdout(chunk: Uint8Array): void {
    let from = 0;
    let at = chunk.indexOf(NEWLINE);
    if (at === -1) {
      this.#carry += this.#decoder.decode(chunk, { stream: true });
      return;
    }
    while (at !== -1) {
      const text = this.#carry + this.#decoder.decode(chunk.subarray(from, at));
      this.#carry = "";
      this.#lines.push(text);
      from = at + 1;
      at = chunk.indexOf(NEWLINE, from);
    }
    if (from < chunk.length) this.#carry = this.#decoder.decode(chunk.subarray(from));
    if (this.#lines.length >= this.#wanted) this.#wake?.();
  }

  /** Writes one line per input and returns the parsed answer lines, in order. */
  async exchange(inputs: string[], signal: AbortSignal): Promise<unknown[]> {
    if (inputs.length === 0) return [];
    this.#lines = [];
    this.#wanted = inputs.length;
    const writing = this.#writer.write(this.#encoder.encode(inputs.join("\n") + "\n"))
      .catch(() => {});
    while (this.#lines.length < inputs.length) {
      if (signal.aborted) throw signal.reason;
      if (this.#exited !== null) {
        // Answers may still be in the pipe: give the pump a moment to deliver them.
        await new Promise((resolve) => setTimeout(resolve, 0));
        if (this.#lines.length >= inputs.length) break;
        throw this.#failure(
          this.#exited.signal !== null
            ? `was killed by ${this.#exited.signal}`
            : `exited with code ${this.#exited.code}`,
          this.#lines.length,
          inputs.length,
        );
      }
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        signal.addEventListener("abort", () => resolve(), { once: true });
      });
      this.#wake = null;
    }
    await writing;
    const answers: unknown[] = new Array(inputs.length);
    for (let i = 0; i < inputs.length; i++) {
      const line = this.#lines[i]!;
      try {
        answers[i] = JSON.parse(line);
      } catch {
        throw this.#failure(
          `answered a line that is not JSON: ${JSON.stringify(line.slice(0, 80))}`,
        );
      }
    }
    this.#lines = [];
    return answers;
  }

  /** A failure of the attempt naming the process and what it did, with its stderr tail. */
  #failure(what: string, got?: number, wanted?: number): JobFailure {
    const counted = got !== undefined ? ` after ${got} of ${wanted} answers` : "";
    const said = this.#stderr.text().trimEnd();
    const message = `${this.label} ${what}${counted}` + (said ? `${STDERR_MARK}${said}` : "");
    return new JobFailure(redact(message));
  }

  /** Fails the attempt: `answer` is not of the protocol. */
  protocolError(answer: unknown, expected: string): JobFailure {
    return this.#failure(
      `answered ${JSON.stringify(answer)?.slice(0, 80)}, not one of ${expected}`,
    );
  }

  /** Closes stdin and kills the group (SIGTERM, then SIGKILL after the grace). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#writer.close().catch(() => {});
    if (!(await within(this.#child.status, 200, this.#clock))) {
      signalGroup(this.#child.pid, "SIGTERM");
      if (!(await within(this.#child.status, this.#killGraceMs, this.#clock))) {
        signalGroup(this.#child.pid, "SIGKILL");
        await this.#child.status;
      }
    }
    signalGroup(this.#child.pid, "SIGKILL");
    releaseOnExit(this.#child.pid);
  }
}
