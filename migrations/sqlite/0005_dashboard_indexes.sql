-- Indexes for the dashboard's reads (`jobs tui`), so that they stay cheap on
-- a large table without costing the hot path.

-- Failed attempts by the instant they ended, for the throughput sparkline
-- (jobsThroughput). Partial: the attempts that succeed, snooze or are
-- cancelled (nearly all of them) add no entry, so recording a completion
-- pays nothing for it. The outcome is in the key so the query's own test of
-- it reads the index; the key carries the primary key (job_id, fence), which
-- finds each failure's job, and so its queue.
CREATE INDEX attempts_failed ON attempts (finished_at, outcome)
  WHERE outcome IN ('retryable', 'discarded');

-- The stager's index of waiting jobs, now with their state and queue: the
-- overview's count of scheduled and retryable jobs per queue reads the index
-- alone instead of looking up each row. The stager still walks it by due time.
DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (scheduled_at, state, queue)
  WHERE state IN ('scheduled', 'retryable');
