/**
 * The console's pages, in the order they register: each page file's
 * `register<Page>`. A new page adds its file, its line here, and its rows
 * in `CONSOLE_ROUTES` (`access.ts`).
 *
 * @module
 */

import type { ConsoleRouter } from "./common.ts";
import { registerOverview } from "./overview.tsx";
import { registerPipelines } from "./pipelines.tsx";
import { registerReports } from "./reports.tsx";
import { registerWorkflows } from "./workflows.tsx";

/** Every page's registration. */
export const PAGES: readonly ((router: ConsoleRouter) => void)[] = [
  registerOverview,
  registerWorkflows,
  registerPipelines,
  registerReports,
];
