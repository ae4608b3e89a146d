-- The CHECK constraints of jobs and attempts, with each list of allowed
-- values written as comparisons joined by OR instead of `IN (...)`. The
-- values allowed are the same. SQLite evaluates `x IN (<3 or more
-- constants>)` by building a temporary b-tree of the list, and in a CHECK it
-- builds it again for every row written: the state check alone cost about 40%
-- of an insert and half of a claim's or a completion's update. A chain of
-- comparisons costs next to nothing. (`IN` of two values is already coded as
-- two comparisons; those are rewritten too, so every check reads alike.)
--
-- SQLite cannot alter a CHECK constraint in place (and the connection's
-- defensive mode rightly refuses edits of sqlite_schema), so both tables are
-- rebuilt: a copy under a new name, the old table dropped, the copy renamed,
-- then the indexes and the trigger that belonged to the old table made again.
-- It runs in the migration's one transaction: a failure leaves the old tables.
-- The id sequence of jobs carries over, so an id deleted by the pruner is
-- never handed out again.

CREATE TABLE jobs_rebuilt (
  -- AUTOINCREMENT: an id is never reused after the pruner deletes a row, so
  -- audit entries and logs that name a job id stay unambiguous.
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  tenant TEXT,
  state TEXT NOT NULL CHECK (
    state = 'scheduled' OR state = 'available' OR state = 'executing' OR state = 'retryable'
      OR state = 'completed' OR state = 'cancelled' OR state = 'discarded'
  ),
  queue TEXT NOT NULL,
  worker TEXT NOT NULL,
  args TEXT NOT NULL,
  meta TEXT NOT NULL DEFAULT '{}',
  tags TEXT NOT NULL DEFAULT '[]',
  errors TEXT NOT NULL DEFAULT '[]',
  schedule_id TEXT,
  scheduled_for INTEGER,
  occurrence TEXT,
  unique_key TEXT,
  -- 'incomplete': unique_key is cleared when the job reaches a final state;
  -- 'all': it stays until the row is pruned. NULL when the job is not unique.
  unique_states TEXT CHECK (unique_states = 'incomplete' OR unique_states = 'all'),
  attempt INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
  priority INTEGER NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 9),
  attempted_by TEXT,
  fence INTEGER NOT NULL DEFAULT 0,
  lease_expires_at INTEGER,
  inserted_at INTEGER NOT NULL,
  scheduled_at INTEGER NOT NULL,
  attempted_at INTEGER,
  completed_at INTEGER,
  cancelled_at INTEGER,
  discarded_at INTEGER
);

INSERT INTO jobs_rebuilt (id, tenant, state, queue, worker, args, meta, tags, errors, schedule_id,
    scheduled_for, occurrence, unique_key, unique_states, attempt, max_attempts, priority,
    attempted_by, fence, lease_expires_at, inserted_at, scheduled_at, attempted_at, completed_at,
    cancelled_at, discarded_at)
  SELECT id, tenant, state, queue, worker, args, meta, tags, errors, schedule_id,
    scheduled_for, occurrence, unique_key, unique_states, attempt, max_attempts, priority,
    attempted_by, fence, lease_expires_at, inserted_at, scheduled_at, attempted_at, completed_at,
    cancelled_at, discarded_at
  FROM jobs ORDER BY id;

-- The copy's sequence stands at its highest id; the old one may stand higher
-- (the newest jobs pruned). Keep the old one. The rename below carries the
-- row over to the name jobs.
DELETE FROM sqlite_sequence WHERE name = 'jobs_rebuilt';
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'jobs_rebuilt', seq FROM sqlite_sequence WHERE name = 'jobs';

DROP TABLE jobs;
ALTER TABLE jobs_rebuilt RENAME TO jobs;

-- The indexes of 0001, 0002 and 0005, as they stood: word for word, since a
-- partial index serves a query only when the query's WHERE names the index's
-- terms as written.
CREATE UNIQUE INDEX jobs_occurrence ON jobs (occurrence) WHERE occurrence IS NOT NULL;
CREATE UNIQUE INDEX jobs_unique_key ON jobs (unique_key) WHERE unique_key IS NOT NULL;
CREATE INDEX jobs_available ON jobs (queue, priority, scheduled_at, id) WHERE state = 'available';
CREATE INDEX jobs_executing ON jobs (lease_expires_at) WHERE state = 'executing';
CREATE INDEX jobs_due ON jobs (scheduled_at, state, queue)
  WHERE state IN ('scheduled', 'retryable');
CREATE INDEX jobs_completed ON jobs (completed_at, queue) WHERE state = 'completed';
CREATE INDEX jobs_cancelled ON jobs (cancelled_at, queue) WHERE state = 'cancelled';
CREATE INDEX jobs_discarded ON jobs (discarded_at, queue) WHERE state = 'discarded';
CREATE INDEX jobs_schedule ON jobs (schedule_id, scheduled_for) WHERE schedule_id IS NOT NULL;
CREATE INDEX jobs_schedule_active ON jobs (schedule_id, state)
  WHERE schedule_id IS NOT NULL AND state IN ('scheduled', 'available', 'executing', 'retryable');

CREATE TABLE attempts_rebuilt (
  job_id INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  fence INTEGER NOT NULL,
  node TEXT,
  kind TEXT NOT NULL CHECK (kind = 'run' OR kind = 'retry' OR kind = 'replay'),
  actor TEXT,
  reason TEXT,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  outcome TEXT CHECK (
    outcome = 'completed' OR outcome = 'snoozed' OR outcome = 'cancelled'
      OR outcome = 'discarded' OR outcome = 'retryable' OR outcome = 'orphaned'
  ),
  error TEXT,
  output TEXT,
  definition TEXT,
  PRIMARY KEY (job_id, fence)
) WITHOUT ROWID;

INSERT INTO attempts_rebuilt (job_id, attempt, fence, node, kind, actor, reason, started_at,
    finished_at, outcome, error, output, definition)
  SELECT job_id, attempt, fence, node, kind, actor, reason, started_at,
    finished_at, outcome, error, output, definition
  FROM attempts ORDER BY job_id, fence;

DROP TABLE attempts;
ALTER TABLE attempts_rebuilt RENAME TO attempts;

CREATE INDEX attempts_failed ON attempts (finished_at, outcome)
  WHERE outcome IN ('retryable', 'discarded');

CREATE TRIGGER replays_consumed AFTER INSERT ON attempts WHEN NEW.kind = 'replay'
BEGIN
  DELETE FROM replays WHERE job_id = NEW.job_id;
END;
