/**
 * A schedule's argv reaches its command literally when the daemon runs it:
 * shell metacharacters, quotes, newlines and `${NAME}` are plain text, and
 * nothing but the command itself runs.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { waitUntil } from "../../src/testing.ts";
import { daemonDir, POLL, readLines, startDaemon } from "../support/daemon_process.ts";

const ECHO_ARGV = fileURLToPath(new URL("./echo_argv.ts", import.meta.url));

/** Arguments each of which would run `touch <marker>` if a shell ever saw it. */
function hostileArgs(dir: string): { args: string[]; markers: string[] } {
  const marker = (name: string) => `${dir}/marker-${name}`;
  const args = [
    `$(touch ${marker("subst")})`,
    `; touch ${marker("semicolon")}`,
    `\`touch ${marker("backtick")}\``,
    `x\ntouch ${marker("newline")}`,
    `| touch ${marker("pipe")}`,
    `&& touch ${marker("and")}`,
    `> ${marker("redirect")}`,
    `'; touch ${marker("quote")}; '`,
    `"; touch ${marker("dquote")}; "`,
    "${HOME} $HOME $$ $1 * ~ \\ \t tab",
    "",
    "  spaced  ",
    "unicode: \u65e5\u672c \u2713",
    "--flag=value",
  ];
  const markers = ["subst", "semicolon", "backtick", "newline", "pipe", "and", "redirect"]
    .concat(["quote", "dquote"]).map(marker);
  return { args, markers };
}

Deno.test({
  name:
    "a schedule's argv with shell metacharacters reaches the child literally and runs nothing else",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dir = await daemonDir();
    const { db, config, ledger } = dir;
    const { args, markers } = hostileArgs(dir.path);
    const argv = [Deno.execPath(), "run", `--allow-write=${ledger}`, ECHO_ARGV, ledger, ...args];
    // JSON is YAML: every string is written with its escapes, exactly.
    await Deno.writeTextFile(
      config,
      `version: 1
schedules:
  - id: hostile
    every: 1s
    overlap_policy: skip
    run:
      command: ${JSON.stringify(argv)}
`,
    );
    await using daemon = await startDaemon({ db, config, node: "d1" });
    const rows = await waitUntil("two runs in the ledger", async () => {
      const found = await readLines(ledger);
      return found.length >= 2 ? found : null;
    }, { timeoutMs: 60_000, ...POLL });
    const status = await daemon.stop("SIGTERM");
    assert.equal(status.code, 0, daemon.log());

    for (const row of rows) assert.deepEqual(JSON.parse(row), args);
    const stops = daemon.events.filter((e) => e.event === "job.stop");
    assert.ok(stops.length >= 2 && stops.every((e) => e.outcome === "completed"), daemon.log());
    for (const marker of markers) {
      assert.equal(await exists(marker), false, `${marker} was created: a shell ran`);
    }
  },
});

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}
