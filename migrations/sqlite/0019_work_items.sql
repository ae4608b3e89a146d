-- Human work queues (src/store/lifecycle/work_items.ts): one row per item,
-- its key unique per queue. score is the queue's rule at age 0 and
-- score_rate what it gains per ms of age; score_rank = score - score_rate *
-- requested_at orders the queue (a score linear in the age keeps the order
-- as time passes), and the score at an instant is computed at read.
-- requested_at is kept across re-adds. A claim is claim_owner until
-- claim_expires_at, with claim_fence rising on every new claim.
-- work_item_events is each item's history: who did what, when, why.

CREATE TABLE work_items (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  queue TEXT NOT NULL,
  key TEXT NOT NULL,
  tenant TEXT,
  data TEXT NOT NULL DEFAULT '{}',
  score REAL,
  score_rate REAL,
  score_rank REAL,
  inputs TEXT,
  rule_version TEXT,
  requested_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  state TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'done')),
  claim_owner TEXT,
  claim_expires_at INTEGER,
  claim_fence INTEGER NOT NULL DEFAULT 0,
  skipped_by TEXT,
  skipped_until INTEGER,
  outcome TEXT,
  action_job_id INTEGER,
  done_by TEXT,
  done_at INTEGER,
  done_reason TEXT,
  UNIQUE (queue, key)
);
-- The listing and next: a queue's open items, best first.
CREATE INDEX work_items_order ON work_items (queue, state, score_rank DESC, requested_at, id);
-- The claims to expire.
CREATE INDEX work_items_claims ON work_items (claim_expires_at) WHERE claim_owner IS NOT NULL;

CREATE TABLE work_item_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  item_id INTEGER NOT NULL,
  at INTEGER NOT NULL,
  actor TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('added', 'updated', 'rescored', 'claimed', 'released', 'expired',
    'skipped', 'reassigned', 'broken', 'done')),
  reason TEXT,
  fence INTEGER,
  detail TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX work_item_events_item ON work_item_events (item_id, id);
