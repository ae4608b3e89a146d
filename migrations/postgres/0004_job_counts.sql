-- The jobs counted per queue and state (see src/store/job_counts.ts): the
-- overview and `jobs status` read these few rows instead of counting every
-- job. A count is its row of job_counts plus its rows of job_count_deltas:
-- each write adds its changes there as new rows (an insert locks nothing
-- another node waits for; one counter row per queue and state would make
-- every node's completions of a queue wait for each other's commits), and
-- the store folds them into job_counts about once a second.
CREATE TABLE job_counts (
  queue text NOT NULL,
  state text NOT NULL,
  count bigint NOT NULL,
  PRIMARY KEY (queue, state)
);

CREATE TABLE job_count_deltas (
  queue text NOT NULL,
  state text NOT NULL,
  delta bigint NOT NULL
);

INSERT INTO job_counts (queue, state, count)
  SELECT queue, state, count(*) FROM jobs GROUP BY queue, state;
