-- Maintenance leadership: one row per role (`maintenance`: the stager,
-- lifeline, pruner and planner), held by one node until expires_at (epoch
-- ms of the holder's clock), renewed well before then. A takeover (the row
-- was free, expired or another node's) raises the fence; a renewal keeps
-- it. node is NULL once the holder released the row on a clean stop. The
-- daemon uses it on PostgreSQL; SQLite has the table too so that both
-- stores pass the same conformance suite.
CREATE TABLE leaders (
  name TEXT PRIMARY KEY,
  node TEXT,
  fence INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  acquired_at INTEGER NOT NULL
);
