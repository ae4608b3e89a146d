-- Operator replays waiting for their attempt. The next attempt row of the job
-- written with a fence above `after` (the job's fence when it was replayed) is
-- recorded with kind 'replay' and this actor and reason; the trigger then
-- removes the row, so one replay marks exactly one attempt. A table of its own
-- (usually empty) keeps the cost off the hot path: writing an attempt looks
-- up an empty index instead of parsing the job's meta.
CREATE TABLE replays (
  job_id INTEGER PRIMARY KEY,
  after INTEGER NOT NULL,
  actor TEXT NOT NULL,
  reason TEXT,
  at INTEGER NOT NULL
);

CREATE TRIGGER replays_consumed AFTER INSERT ON attempts WHEN NEW.kind = 'replay'
BEGIN
  DELETE FROM replays WHERE job_id = NEW.job_id;
END;
