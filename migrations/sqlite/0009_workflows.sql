-- Workflow runs and their steps. A run keeps the compiled definition it was
-- started with (definition, JSON), so advancing it reads nothing but the
-- run. key is the start's idempotency key (a schedule occurrence's
-- identity, or the caller's): a second start with it finds the first run.
CREATE TABLE workflow_runs (
  -- AUTOINCREMENT: a run id is never reused once the pruner deletes it.
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workflow TEXT NOT NULL,
  hash TEXT NOT NULL,
  definition TEXT NOT NULL,
  state TEXT NOT NULL,
  input TEXT NOT NULL,
  tenant TEXT,
  key TEXT UNIQUE,
  error TEXT,
  cancel_reason TEXT,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  updated_at INTEGER NOT NULL
);
CREATE INDEX workflow_runs_state ON workflow_runs (state, id);
CREATE INDEX workflow_runs_workflow ON workflow_runs (workflow, id);

-- One row per step that has started (item -1), per item of a fanned-out
-- step (item 0, 1, ...) and per compensation (kind 'compensation'), with
-- the job that runs it. A step with no row is waiting for its
-- dependencies. result and cursor are JSON text; seq orders completions
-- (compensations run in its reverse); items/remaining count a fanned-out
-- step's items and those not ended yet.
CREATE TABLE workflow_steps (
  run_id INTEGER NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  step TEXT NOT NULL,
  item INTEGER NOT NULL,
  job_id INTEGER,
  state TEXT NOT NULL,
  result TEXT,
  cursor TEXT,
  seq INTEGER,
  error TEXT,
  items INTEGER,
  remaining INTEGER,
  created_at INTEGER NOT NULL,
  finished_at INTEGER,
  PRIMARY KEY (run_id, kind, step, item)
) WITHOUT ROWID;
CREATE INDEX workflow_steps_job ON workflow_steps (job_id) WHERE job_id IS NOT NULL;
