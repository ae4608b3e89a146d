/**
 * The console's pages, in the order they register: each page file's
 * `register<Page>`. A new page adds its file, its line here, and its rows
 * in `CONSOLE_ROUTES` (`access.ts`).
 *
 * @module
 */

import type { ConsoleRouter } from "./common.ts";
import { registerEvents } from "./events.ts";
import { registerJob } from "./job.tsx";
import { registerJobs } from "./jobs.tsx";
import { registerOverview } from "./overview.tsx";
import { registerQueues } from "./queues.tsx";
import { registerSchedules } from "./schedules.tsx";
import { registerAudit } from "./audit.tsx";
import { registerPeople } from "./people.tsx";
import { registerPipelines } from "./pipelines.tsx";
import { registerReports } from "./reports.tsx";
import { registerWorkflows } from "./workflows.tsx";
import { registerBulk } from "./bulk.tsx";
import { registerWork } from "./work.tsx";
import { registerWorkBulk } from "./work_bulk.tsx";

/** Every page's registration. */
export const PAGES: readonly ((router: ConsoleRouter) => void)[] = [
  registerOverview,
  registerEvents,
  registerJobs,
  registerBulk,
  registerJob,
  registerQueues,
  registerSchedules,
  registerAudit,
  registerPeople,
  registerWorkflows,
  registerPipelines,
  registerReports,
  registerWork,
  registerWorkBulk,
];
