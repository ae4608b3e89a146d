-- Bulk actions over everything a filter matched (src/admin/bulk.ts): the
-- snapshot of job ids taken at confirmation, in the scope of the person who
-- confirmed (ids, a JSON array, at most 1,000,000), walked in chunks by one
-- `jobs.bulk` job that records its progress here. filter is the filter as
-- given, JSON, for display only: the snapshot, never the filter, says which
-- jobs the run acts on. abort_requested asks the walk to stop between chunks.

CREATE TABLE bulk_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  action TEXT NOT NULL CHECK (action IN ('retry', 'cancel', 'discard')),
  filter TEXT NOT NULL DEFAULT '{}',
  ids TEXT NOT NULL DEFAULT '[]',
  total INTEGER NOT NULL,
  done INTEGER NOT NULL DEFAULT 0,
  changed INTEGER NOT NULL DEFAULT 0,
  skipped INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL CHECK (state IN ('running', 'completed', 'aborted', 'failed')),
  actor TEXT NOT NULL,
  reason TEXT,
  tenant TEXT,
  created_at INTEGER NOT NULL,
  finished_at INTEGER,
  abort_requested INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX bulk_runs_tenant ON bulk_runs (tenant, id);
