/**
 * `jobs tui`: the interactive dashboard on the store the daemon uses. It
 * reads and acts only through `src/admin/` (the same views and actions the
 * commands use), so each action is audited as the runbook commands' are;
 * `--read-only` refuses every action.
 *
 * Its modules (the dashboard's data and actions, ink and react) are
 * imported only when it runs: every other command, `jobs daemon` first, is
 * one program with this one and does not evaluate them.
 *
 * @module
 */

import type { Command } from "commander";
import {
  type CliDeps,
  CommandFailed,
  configPath,
  dbPath,
  globalOptions,
  quiet,
  who,
  writeMoved,
} from "./common.ts";
import { openFailure, openStore, tryOpenStore } from "./store/open.ts";
import { storeOrigin } from "./project_file.ts";
import { commandLine } from "./text.ts";
import { escapeControl } from "../text/escape.ts";

/** Options of `jobs tui`. */
interface TuiOptions {
  db?: string;
  config?: string;
  readOnly?: boolean;
  actor?: string;
  environment?: string;
}

/** Registers `jobs tui` on the program. */
export function registerTuiCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("tui")
        .description("the interactive dashboard: queues, jobs, schedules, dead letters, actions")
        .option("--read-only", "look only: every action is refused")
        .option(
          "--environment <name>",
          "where this runs; a manual schedule's runs_where must match [env JOBS_ENVIRONMENT]",
        ),
      {
        db: { mode: "write" },
        config: { for: "for the schedules and queues it shows" },
        json: { not: "it is a screen for a person; for scripts use status, ls or show --json" },
        audit: { noReason: "each action asks for its reason on the screen" },
      },
    ).action(async (options: TuiOptions) => {
      await tuiCommand(options, deps);
    }),
    deps,
    "tui",
  );
}

async function tuiCommand(options: TuiOptions, deps: CliDeps): Promise<void> {
  const db = dbPath(options.db, deps);
  if (!Deno.stdin.isTerminal() || !Deno.stdout.isTerminal()) {
    const script = ["status", "ls", "show"].map((c) => commandLine(deps.program, [c])).join(", ");
    throw new CommandFailed(
      `jobs tui: needs a terminal on stdin and stdout; for scripts use ${script}`,
    );
  }
  // A store migrate-store retired is shown read-only (unless --force-moved),
  // with where it moved beside its location at the top.
  const leave = writeMoved(deps);
  const peek = await tryOpenStore(db, "read", deps);
  if (peek.ok) await peek.store.close();
  const moved = peek.ok && !leave ? peek.moved : null;
  const readOnly = options.readOnly === true || moved !== null;
  // Fail before taking over the screen when the store cannot be opened as it is.
  const mode = readOnly ? "read" : "write";
  await (await openStore("tui", db, mode, deps)).store.close();
  const [{ storeActions }, { configFile, storeAt, storeData }] = await Promise.all([
    import("../tui/actions.ts"),
    import("../tui/data.ts"),
  ]);
  const source = storeAt(db, {
    now: () => deps.clock.now(),
    mode,
    writeMoved: leave ?? undefined,
    note: moved ? ` (MOVED to ${escapeControl(moved.to)}: read only)` : undefined,
    explain: (error) => openFailure(db, error, deps.program, storeOrigin(db, deps)),
  });
  const config = configFile(configPath(options.config, deps));
  try {
    // ink renders only the last frame, at exit, where it believes it runs
    // under CI (CI, CONTINUOUS_INTEGRATION or CI_* set, read when ink loads).
    // This command only runs on a terminal, so it is loaded here, after those
    // are cleared for this process; other commands never load ink at all.
    for (const name of Object.keys(Deno.env.toObject())) {
      if (name === "CI" || name === "CONTINUOUS_INTEGRATION" || name.startsWith("CI_")) {
        Deno.env.delete(name);
      }
    }
    const { runDashboard } = await import("../tui/run.tsx");
    await runDashboard({
      data: storeData({ source, config, clock: deps.clock }),
      actions: storeActions({
        source,
        config,
        configPath: configPath(options.config, deps),
        clock: deps.clock,
        actor: who(options, deps).actor,
        environment: options.environment ?? deps.env("JOBS_ENVIRONMENT") ?? null,
      }),
      clock: deps.clock,
      readOnly,
      color: deps.color,
      program: deps.program,
    });
  } finally {
    await source.close();
  }
}
