/**
 * The PostgreSQL migrations, embedded in the program so a compiled binary
 * needs nothing beside it. Add a file to `migrations/postgres/` and a line
 * here. Version 1 is the whole schema the SQLite store reached in its
 * versions 1 to 7; later versions number on from there, each one change.
 *
 * @module
 */

import init from "../../../migrations/postgres/0001_init.sql" with { type: "text" };
import leadership from "../../../migrations/postgres/0002_leadership.sql" with { type: "text" };
import workflows from "../../../migrations/postgres/0003_workflows.sql" with { type: "text" };
import jobCounts from "../../../migrations/postgres/0004_job_counts.sql" with { type: "text" };
import ingest from "../../../migrations/postgres/0005_ingest.sql" with { type: "text" };
import reports from "../../../migrations/postgres/0006_reports.sql" with { type: "text" };
import scheduleDefinition from "../../../migrations/postgres/0007_schedule_definition.sql" with {
  type: "text",
};
import principals from "../../../migrations/postgres/0008_principals.sql" with { type: "text" };
import ingestTenant from "../../../migrations/postgres/0009_ingest_tenant.sql" with {
  type: "text",
};
import sessions from "../../../migrations/postgres/0010_sessions.sql" with { type: "text" };
import bulkRuns from "../../../migrations/postgres/0011_bulk_runs.sql" with { type: "text" };
import workItems from "../../../migrations/postgres/0012_work_items.sql" with { type: "text" };
import bulkRequests from "../../../migrations/postgres/0013_bulk_requests.sql" with {
  type: "text",
};
import workQueueMetrics from "../../../migrations/postgres/0014_work_queue_metrics.sql" with {
  type: "text",
};
import flow from "../../../migrations/postgres/0015_flow.sql" with { type: "text" };
import workItemsFree from "../../../migrations/postgres/0016_work_items_free.sql" with {
  type: "text",
};
import workItemsNext from "../../../migrations/postgres/0017_work_items_next.sql" with {
  type: "text",
};
import flowClaim from "../../../migrations/postgres/0018_flow_claim.sql" with { type: "text" };

/** One numbered migration. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Every migration this program knows, in order. */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "0001_init.sql", sql: init },
  { version: 2, name: "0002_leadership.sql", sql: leadership },
  { version: 3, name: "0003_workflows.sql", sql: workflows },
  { version: 4, name: "0004_job_counts.sql", sql: jobCounts },
  { version: 5, name: "0005_ingest.sql", sql: ingest },
  { version: 6, name: "0006_reports.sql", sql: reports },
  { version: 7, name: "0007_schedule_definition.sql", sql: scheduleDefinition },
  { version: 8, name: "0008_principals.sql", sql: principals },
  { version: 9, name: "0009_ingest_tenant.sql", sql: ingestTenant },
  { version: 10, name: "0010_sessions.sql", sql: sessions },
  { version: 11, name: "0011_bulk_runs.sql", sql: bulkRuns },
  { version: 12, name: "0012_work_items.sql", sql: workItems },
  { version: 13, name: "0013_bulk_requests.sql", sql: bulkRequests },
  { version: 14, name: "0014_work_queue_metrics.sql", sql: workQueueMetrics },
  { version: 15, name: "0015_flow.sql", sql: flow },
  { version: 16, name: "0016_work_items_free.sql", sql: workItemsFree },
  { version: 17, name: "0017_work_items_next.sql", sql: workItemsNext },
  { version: 18, name: "0018_flow_claim.sql", sql: flowClaim },
];

/** The migrations a database at schema `version` has not applied yet, in order. */
export function pendingMigrations(version: number): Migration[] {
  return MIGRATIONS.filter((m) => m.version > version);
}

/** The latest schema version this program knows. */
export const KNOWN_VERSION: number = MIGRATIONS.at(-1)?.version ?? 0;
