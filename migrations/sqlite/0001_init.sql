-- The queue kernel: jobs and their attempts, queues, nodes, settings, audit.
-- Every instant is UTC epoch milliseconds (INTEGER).

CREATE TABLE jobs (
  -- AUTOINCREMENT: an id is never reused after the pruner deletes a row, so
  -- audit entries and logs that name a job id stay unambiguous.
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  tenant TEXT,
  state TEXT NOT NULL CHECK (state IN (
    'scheduled', 'available', 'executing', 'retryable', 'completed', 'cancelled', 'discarded'
  )),
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
  unique_states TEXT CHECK (unique_states IN ('incomplete', 'all')),
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

-- Identity and uniqueness, as partial unique indexes: a plain job (no
-- occurrence, no unique key) has no entry in them, and clearing a key that
-- was never set costs nothing when the job completes.
CREATE UNIQUE INDEX jobs_occurrence ON jobs (occurrence) WHERE occurrence IS NOT NULL;
CREATE UNIQUE INDEX jobs_unique_key ON jobs (unique_key) WHERE unique_key IS NOT NULL;

-- One partial index per stage of a job's life, so each transition touches as
-- few index entries as it can: a claim removes the job from jobs_available and
-- adds it to jobs_executing; a completion moves it to jobs_completed.
--
-- Fetch: only available jobs, in claim order (the (state, queue, priority,
-- scheduled_at, id) order of ARCHITECTURE.md, with state as the partial WHERE).
CREATE INDEX jobs_available ON jobs (queue, priority, scheduled_at, id) WHERE state = 'available';
-- Lifeline and heartbeat: leases by expiry.
CREATE INDEX jobs_executing ON jobs (lease_expires_at) WHERE state = 'executing';
-- Stager: scheduled and retryable jobs by due time.
CREATE INDEX jobs_due ON jobs (scheduled_at) WHERE state IN ('scheduled', 'retryable');
-- Final jobs, one small index per final state, by the instant the job became
-- final: the pruner walks them oldest first, and with the queue beside it a
-- count per queue reads only the index. (One index keyed by state and an
-- expression over the three instants cost a fifth of the throughput.)
CREATE INDEX jobs_completed ON jobs (completed_at, queue) WHERE state = 'completed';
CREATE INDEX jobs_cancelled ON jobs (cancelled_at, queue) WHERE state = 'cancelled';
CREATE INDEX jobs_discarded ON jobs (discarded_at, queue) WHERE state = 'discarded';
CREATE INDEX jobs_schedule ON jobs (schedule_id, scheduled_for) WHERE schedule_id IS NOT NULL;

-- One row per attempt: written when the attempt ends (by its node) or when the
-- lifeline rescues it. A node that lost its lease writes nothing.
CREATE TABLE attempts (
  job_id INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  fence INTEGER NOT NULL,
  node TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('run', 'retry', 'replay')),
  actor TEXT,
  reason TEXT,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  outcome TEXT CHECK (outcome IN (
    'completed', 'snoozed', 'cancelled', 'discarded', 'retryable', 'orphaned'
  )),
  error TEXT,
  PRIMARY KEY (job_id, fence)
) WITHOUT ROWID;

CREATE TABLE queues (
  name TEXT PRIMARY KEY,
  paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
  concurrency INTEGER CHECK (concurrency >= 1),
  updated_at INTEGER NOT NULL
);

CREATE TABLE nodes (
  node TEXT PRIMARY KEY,
  queues TEXT NOT NULL DEFAULT '{}',
  started_at INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL
);

CREATE TABLE settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);

CREATE TABLE audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  reason TEXT,
  details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_target ON audit (target, at);
