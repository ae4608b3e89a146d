/**
 * A real terminal for the end-to-end tests of `jobs tui`: one tmux server of
 * its own (`tmux -L <unique socket>`, no user config), one pane of a fixed
 * size running one command, keys sent with `send-keys` and the screen read
 * with `capture-pane -p`.
 *
 * Everything waits by polling the screen with a deadline (`waitUntil`);
 * nothing sleeps to synchronise. Deadlines are generous: these tests share
 * two cores with hundreds of others in CI.
 */

import { waitUntil } from "../../src/testing.ts";

/** How long the first frame may take (`deno run` loads ink and react, on a loaded machine). */
export const FIRST_FRAME_MS = 60_000;
/** How long any later frame may take after a key. */
export const FRAME_MS = 30_000;

/** Poll interval of the screen: each poll is one short `tmux` process. */
const POLL_MS = 100;

/** Options of {@linkcode openTerminal}. */
export interface TerminalOptions {
  /** The program and its arguments, run directly (no shell) in the pane. */
  argv: string[];
  /** Columns of the pane. */
  width: number;
  /** Rows of the pane (there is no status line: every row is the program's). */
  height: number;
  /** The pane's working directory. */
  cwd: string;
  /** The title the pane starts with, so that a change to it can be seen. */
  title: string;
  /** More lines of tmux configuration, e.g. `set -s set-clipboard on`. */
  config?: string[];
}

/** A tmux server with one pane running a command; disposing of it kills the server. */
export interface Terminal {
  /** The `-L` socket name of this server. */
  readonly socket: string;
  /** The visible text of the pane, one line per row, without colours. */
  screen(): Promise<string>;
  /**
   * The main screen's scrollback and the visible rows after it: what the
   * pane printed, even the rows a later line feed pushed off the top (tmux
   * scrolls once to write "Pane is dead" when the program ends).
   */
  scrollback(): Promise<string>;
  /**
   * Polls the screen until `test` accepts it (returned), or throws after
   * `timeoutMs` naming `what` and showing the last screen. `test` may throw
   * to stop waiting at once (the program exited, say).
   */
  waitForScreen(
    what: string,
    test: (screen: string) => boolean,
    timeoutMs?: number,
  ): Promise<string>;
  /** Sends tmux key names (`Enter`, `Escape`, `Down`) or single characters, one key each. */
  press(...keys: string[]): Promise<void>;
  /** A tmux format expanded for the pane, e.g. `#{pane_title}`. */
  format(format: string): Promise<string>;
  /** The names of tmux's paste buffers (what an OSC 52 clipboard write creates). */
  buffers(): Promise<string[]>;
  /** Kills the server and everything in its pane. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Starts a tmux server of its own on a fresh socket with one detached
 * session of `width`x`height` running `argv`. The pane stays after the
 * program ends (`remain-on-exit`), so its last screen can still be read.
 */
export async function openTerminal(options: TerminalOptions): Promise<Terminal> {
  const socket = `jobs-tui-e2e-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
  const configFile = `${options.cwd}/${socket}.conf`;
  await Deno.writeTextFile(
    configFile,
    [
      // Every row is the pane's: the size asked for is the size the program sees.
      "set -g status off",
      "set -g remain-on-exit on",
      "set -g history-limit 1000",
      ...(options.config ?? []),
      "",
    ].join("\n"),
  );
  const tmux = (args: string[]) => runTmux(socket, configFile, args);
  const target = "e2e:0.0";
  let socketPath: string | null = null;
  const terminal: Terminal = {
    socket,
    screen: () => tmux(["capture-pane", "-p", "-t", target]),
    scrollback: () => tmux(["capture-pane", "-p", "-S", "-", "-t", target]),
    async waitForScreen(what, test, timeoutMs = FRAME_MS) {
      let last = "";
      try {
        return await waitUntil(what, async () => {
          last = await terminal.screen();
          return test(last) ? last : null;
        }, { timeoutMs, intervalMs: POLL_MS });
      } catch (error) {
        throw new Error(`${(error as Error).message}; the screen was:\n${frame(last)}`, {
          cause: error,
        });
      }
    },
    async press(...keys) {
      for (const key of keys) await tmux(["send-keys", "-t", target, key]);
    },
    async format(format) {
      return (await tmux(["display-message", "-p", "-t", target, format])).replace(/\n$/, "");
    },
    async buffers() {
      const listed = await tmux(["list-buffers", "-F", "#{buffer_name}"]);
      return listed.split("\n").filter((line) => line !== "");
    },
    async [Symbol.asyncDispose]() {
      // Already gone (or never started) is fine: nothing is left to kill.
      await runTmux(socket, configFile, ["kill-server"]).catch(() => {});
      // tmux leaves the socket file behind; one per test would pile up.
      if (socketPath !== null) await Deno.remove(socketPath).catch(() => {});
    },
  };
  try {
    await tmux([
      "new-session",
      "-d",
      "-s",
      "e2e",
      "-x",
      String(options.width),
      "-y",
      String(options.height),
      "-c",
      options.cwd,
      ...options.argv,
    ]);
    // Set once the session exists; the test reads it back at the first frame.
    socketPath = (await tmux(["display-message", "-p", "#{socket_path}"])).trim() || null;
    await tmux(["select-pane", "-t", target, "-T", options.title]);
  } catch (error) {
    await terminal[Symbol.asyncDispose]();
    throw error;
  }
  return terminal;
}

/** Runs one tmux command line against server `socket`; its stdout, or an error with its stderr. */
async function runTmux(socket: string, configFile: string, args: string[]): Promise<string> {
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command("tmux", {
      args: ["-L", socket, "-f", configFile, ...args],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(FRAME_MS),
    }).output();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Error(
        "tmux is not on PATH: the TUI end-to-end tests need it (.ci/run installs it)",
      );
    }
    throw error;
  }
  const decoder = new TextDecoder();
  if (!output.success) {
    throw new Error(
      `tmux ${args[0]} failed (exit ${output.code}): ${decoder.decode(output.stderr).trim()}`,
    );
  }
  return decoder.decode(output.stdout);
}

/** A screen framed for an assertion message, trailing blank rows dropped. */
export function frame(screen: string): string {
  return `┌\n${screen.replace(/\s+$/, "").split("\n").map((line) => `│${line}`).join("\n")}\n└`;
}
