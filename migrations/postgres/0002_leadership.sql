-- Maintenance leadership: one row per role (`maintenance`: the stager,
-- lifeline, pruner and planner), held by one node until expires_at (epoch
-- ms of the holder's clock), renewed well before then. A takeover (the row
-- was free, expired or another node's) raises the fence; a renewal keeps
-- it. node is NULL once the holder released the row on a clean stop.
-- Correctness never depends on this row: it only spares the other nodes
-- passes that would find nothing to do.
CREATE TABLE leaders (
  name text PRIMARY KEY,
  node text,
  fence bigint NOT NULL,
  expires_at bigint NOT NULL,
  acquired_at bigint NOT NULL
);
