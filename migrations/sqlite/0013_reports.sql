-- Report runs (src/report/): one row per run, made `queued` with its
-- `jobs.report` job, its progress and its stored output until the pruner
-- removes both at expiry.

CREATE TABLE report_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  report TEXT NOT NULL,
  -- OR chains, not IN lists: see 0010_cheap_checks.sql.
  state TEXT NOT NULL CHECK (
    state = 'queued' OR state = 'running' OR state = 'completed' OR state = 'failed'
      OR state = 'cancelled'
  ),
  job_id INTEGER NOT NULL UNIQUE,
  tenant TEXT,
  actor TEXT NOT NULL,
  roles TEXT NOT NULL DEFAULT '[]',
  params TEXT NOT NULL DEFAULT '{}',
  sort TEXT,
  format TEXT NOT NULL,
  rows INTEGER NOT NULL DEFAULT 0,
  bytes INTEGER NOT NULL DEFAULT 0,
  output TEXT,
  storage_key TEXT,
  error TEXT,
  limit_name TEXT,
  requested_at INTEGER NOT NULL,
  started_at INTEGER,
  updated_at INTEGER NOT NULL,
  finished_at INTEGER,
  expires_at INTEGER
);
CREATE INDEX report_runs_report ON report_runs (report, id);
CREATE INDEX report_runs_active ON report_runs (report, state)
  WHERE state = 'queued' OR state = 'running';
CREATE INDEX report_runs_expiry ON report_runs (expires_at) WHERE expires_at IS NOT NULL;
