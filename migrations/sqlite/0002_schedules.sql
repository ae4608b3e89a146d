-- Schedules: one row per schedule id ever seen in schedules.yaml. The row
-- outlives the file's entry, so a removed schedule's history stays readable;
-- the planner plans only the ids the current file declares.

CREATE TABLE schedules (
  id TEXT PRIMARY KEY,
  tenant TEXT,
  enabled INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  disabled_reason TEXT,
  disabled_by TEXT,
  disabled_at INTEGER,
  -- A hash of the schedule's definition as last synced, to tell a changed schedule.
  definition_hash TEXT,
  -- The recovery point: every occurrence at or before it has been planned
  -- (inserted, skipped by policy, or counted as a misfire).
  last_planned_for INTEGER,
  last_started_at INTEGER,
  last_completed_at INTEGER,
  -- Occurrences skipped by the misfire policy, in all, and the latest instant skipped.
  misfires INTEGER NOT NULL DEFAULT 0,
  last_misfire_for INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

-- A schedule's occurrences that are not final, for the overlap policy. Plain
-- jobs (no schedule) never have an entry, so they pay nothing for it.
CREATE INDEX jobs_schedule_active ON jobs (schedule_id, state)
  WHERE schedule_id IS NOT NULL AND state IN ('scheduled', 'available', 'executing', 'retryable');
