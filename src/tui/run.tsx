/**
 * Runs the dashboard on a real terminal: the alternate screen (what was on
 * the terminal comes back on quit), raw keys, redraws of changed lines
 * only, and a resize handler; resolves when the operator quits.
 *
 * @module
 */

import { render } from "ink";
import type { Clock } from "../clock.ts";
import type { DashboardActions } from "./actions.ts";
import { App } from "./app.tsx";
import type { DashboardData } from "./data.ts";

/** Shows the dashboard until `q` (or Ctrl-C); the terminal is restored before this resolves. */
export async function runDashboard(params: {
  data: DashboardData;
  actions: DashboardActions;
  clock: Clock;
  readOnly: boolean;
  color: boolean;
  /** The command a person types to reach this program (`CliDeps.program`), for hints to paste. */
  program: string;
  /** @default 1000 */
  refreshMs?: number;
}): Promise<void> {
  const instance = render(
    <App
      data={params.data}
      actions={params.actions}
      clock={params.clock}
      program={params.program}
      readOnly={params.readOnly}
      color={params.color}
      refreshMs={params.refreshMs ?? 1000}
    />,
    {
      alternateScreen: true,
      incrementalRendering: true,
      // Console output would tear the screen; nothing in the dashboard logs.
      patchConsole: true,
      exitOnCtrlC: true,
      maxFps: 30,
    },
  );
  await instance.waitUntilExit();
}
