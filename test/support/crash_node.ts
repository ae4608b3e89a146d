/**
 * Test support: one node of a `kill -9` test, a child Deno process running
 * a script of the test (a library node), with its `ready` line, its exit
 * and its stderr for failures.
 */

import { lines } from "./processes.ts";

/** A child node: start it, wait for `ready`, SIGKILL it or stop it. */
export class CrashNode {
  readonly #process: Deno.ChildProcess;
  /** True once the child printed `ready`; false when its stdout ended first. */
  readonly ready: Promise<boolean>;
  readonly #status: Promise<Deno.CommandStatus>;
  readonly #stderr: Promise<string>;
  /** Set once the process is gone (killed, or ended by itself). */
  exited = false;

  /** Runs `script` with `args` (read, write, env, sys and net allowed). */
  constructor(script: string, args: string[], readonly name: string) {
    this.#process = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--allow-read",
        "--allow-write",
        "--allow-env",
        "--allow-sys",
        "--allow-net",
        script,
        ...args,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const { stdout, stderr } = this.#process;
    this.ready = (async () => {
      for await (const line of lines(stdout)) if (line === "ready") return true;
      return false;
    })();
    this.#status = this.#process.status;
    this.#status.then(() => this.exited = true);
    this.#stderr = new Response(stderr).text();
  }

  /** What it wrote on stderr (once it is gone). */
  stderr(): Promise<string> {
    return this.#stderr;
  }

  /** SIGKILL, then its status once it is gone. */
  async kill(): Promise<Deno.CommandStatus> {
    try {
      this.#process.kill("SIGKILL");
    } catch {
      // already gone
    }
    return await this.#status;
  }

  /** SIGTERM (a graceful stop), then its status and what it wrote on stderr. */
  async stop(): Promise<{ status: Deno.CommandStatus; stderr: string }> {
    this.#process.kill("SIGTERM");
    return { status: await this.#status, stderr: await this.#stderr };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.kill();
    await this.#stderr.catch(() => "");
  }
}
