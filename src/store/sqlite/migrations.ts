/**
 * The SQLite migrations, embedded in the program so a compiled binary needs
 * nothing beside it. Add a file to `migrations/sqlite/` and a line here; a
 * test checks that the two agree.
 *
 * @module
 */

import init from "../../../migrations/sqlite/0001_init.sql" with { type: "text" };
import schedules from "../../../migrations/sqlite/0002_schedules.sql" with { type: "text" };
import attemptOutput from "../../../migrations/sqlite/0003_attempt_output.sql" with {
  type: "text",
};
import replays from "../../../migrations/sqlite/0004_replays.sql" with { type: "text" };
import dashboardIndexes from "../../../migrations/sqlite/0005_dashboard_indexes.sql" with {
  type: "text",
};
import attemptDefinition from "../../../migrations/sqlite/0006_attempt_definition.sql" with {
  type: "text",
};
import nodeEnvironment from "../../../migrations/sqlite/0007_node_environment.sql" with {
  type: "text",
};
import leadership from "../../../migrations/sqlite/0008_leadership.sql" with { type: "text" };
import workflows from "../../../migrations/sqlite/0009_workflows.sql" with { type: "text" };
import cheapChecks from "../../../migrations/sqlite/0010_cheap_checks.sql" with { type: "text" };
import jobCounts from "../../../migrations/sqlite/0011_job_counts.sql" with { type: "text" };
import ingest from "../../../migrations/sqlite/0012_ingest.sql" with { type: "text" };
import reports from "../../../migrations/sqlite/0013_reports.sql" with { type: "text" };
import scheduleDefinition from "../../../migrations/sqlite/0014_schedule_definition.sql" with {
  type: "text",
};
import principals from "../../../migrations/sqlite/0015_principals.sql" with { type: "text" };
import ingestTenant from "../../../migrations/sqlite/0016_ingest_tenant.sql" with {
  type: "text",
};
import sessions from "../../../migrations/sqlite/0017_sessions.sql" with { type: "text" };
import bulkRuns from "../../../migrations/sqlite/0018_bulk_runs.sql" with { type: "text" };
import workItems from "../../../migrations/sqlite/0019_work_items.sql" with { type: "text" };
import bulkRequests from "../../../migrations/sqlite/0020_bulk_requests.sql" with {
  type: "text",
};
import workQueueMetrics from "../../../migrations/sqlite/0021_work_queue_metrics.sql" with {
  type: "text",
};
import flow from "../../../migrations/sqlite/0022_flow.sql" with { type: "text" };
import workItemsFree from "../../../migrations/sqlite/0023_work_items_free.sql" with {
  type: "text",
};

/** One numbered migration. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Every migration this program knows, in order. */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "0001_init.sql", sql: init },
  { version: 2, name: "0002_schedules.sql", sql: schedules },
  { version: 3, name: "0003_attempt_output.sql", sql: attemptOutput },
  { version: 4, name: "0004_replays.sql", sql: replays },
  { version: 5, name: "0005_dashboard_indexes.sql", sql: dashboardIndexes },
  { version: 6, name: "0006_attempt_definition.sql", sql: attemptDefinition },
  { version: 7, name: "0007_node_environment.sql", sql: nodeEnvironment },
  { version: 8, name: "0008_leadership.sql", sql: leadership },
  { version: 9, name: "0009_workflows.sql", sql: workflows },
  { version: 10, name: "0010_cheap_checks.sql", sql: cheapChecks },
  { version: 11, name: "0011_job_counts.sql", sql: jobCounts },
  { version: 12, name: "0012_ingest.sql", sql: ingest },
  { version: 13, name: "0013_reports.sql", sql: reports },
  { version: 14, name: "0014_schedule_definition.sql", sql: scheduleDefinition },
  { version: 15, name: "0015_principals.sql", sql: principals },
  { version: 16, name: "0016_ingest_tenant.sql", sql: ingestTenant },
  { version: 17, name: "0017_sessions.sql", sql: sessions },
  { version: 18, name: "0018_bulk_runs.sql", sql: bulkRuns },
  { version: 19, name: "0019_work_items.sql", sql: workItems },
  { version: 20, name: "0020_bulk_requests.sql", sql: bulkRequests },
  { version: 21, name: "0021_work_queue_metrics.sql", sql: workQueueMetrics },
  { version: 22, name: "0022_flow.sql", sql: flow },
  { version: 23, name: "0023_work_items_free.sql", sql: workItemsFree },
];

/** The migrations a database at schema `version` has not applied yet, in order. */
export function pendingMigrations(version: number): Migration[] {
  return MIGRATIONS.filter((m) => m.version > version);
}

/** The latest schema version this program knows. */
export const KNOWN_VERSION: number = MIGRATIONS.at(-1)?.version ?? 0;
