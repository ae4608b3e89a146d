-- Report runs (src/report/): one row per run, made `queued` with its
-- `jobs.report` job, its progress and its stored output until the pruner
-- removes both at expiry.

CREATE TABLE report_runs (
  id bigserial PRIMARY KEY,
  report text NOT NULL,
  state text NOT NULL CHECK (state IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
  job_id bigint NOT NULL UNIQUE,
  tenant text,
  actor text NOT NULL,
  roles jsonb NOT NULL DEFAULT '[]',
  params jsonb NOT NULL DEFAULT '{}',
  sort text,
  format text NOT NULL,
  rows bigint NOT NULL DEFAULT 0,
  bytes bigint NOT NULL DEFAULT 0,
  output text,
  storage_key text,
  error text,
  limit_name text,
  requested_at bigint NOT NULL,
  started_at bigint,
  updated_at bigint NOT NULL,
  finished_at bigint,
  expires_at bigint
);
CREATE INDEX report_runs_report ON report_runs (report, id);
CREATE INDEX report_runs_active ON report_runs (report, state)
  WHERE state IN ('queued', 'running');
CREATE INDEX report_runs_expiry ON report_runs (expires_at) WHERE expires_at IS NOT NULL;
