-- The hash of the schedule definition each attempt ran: a replay or retry
-- runs the schedule's live definition by default, and `jobs show` says
-- which one each attempt had. Null for jobs that are no schedule's and for
-- attempts written before this migration.
ALTER TABLE attempts ADD COLUMN definition TEXT;
