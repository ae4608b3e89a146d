-- Bulk money confirmed out of band (src/workqueue/confirm.ts).
--
-- totp_enrolments: a person's TOTP authenticator (`jobs users totp <name>`).
-- The seed cannot be hashed (a code is computed from it), so it is kept as
-- it is, base32, in a table of its own that only one store method reads
-- (totpSecret): no listing, API answer or log carries it. last_step is the
-- newest 30-second step a code of this person confirmed with: a code works
-- once, never again in its window (RFC 6238, 5.2).
--
-- bulk_requests: a confirmation code bound to a manifest (the hash of a bulk
-- action and the exact items with their amounts). Only the code's scrypt
-- hash is kept (code_hash, null for a TOTP channel, where nothing is sent);
-- the code itself is never stored. A request is pending until it is
-- confirmed once, expires, is locked by its fifth wrong code, or is void
-- (superseded by a new request, its manifest changed, its delivery failed).
-- items and totals are JSON text, as the preview showed them.

CREATE TABLE totp_enrolments (
  person TEXT PRIMARY KEY,
  secret TEXT NOT NULL,
  last_step INTEGER,
  enrolled_by TEXT NOT NULL,
  enrolled_at INTEGER NOT NULL
);

CREATE TABLE bulk_requests (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  manifest TEXT NOT NULL,
  queue TEXT NOT NULL,
  bulk TEXT NOT NULL,
  tenant TEXT,
  items TEXT NOT NULL DEFAULT '[]',
  totals TEXT NOT NULL DEFAULT '{}',
  requester TEXT NOT NULL,
  -- OR chains, not IN lists: see 0010_cheap_checks.sql.
  channel TEXT NOT NULL CHECK (channel = 'command' OR channel = 'webhook' OR channel = 'email'
    OR channel = 'totp'),
  approver_role TEXT,
  second_person INTEGER NOT NULL DEFAULT 0 CHECK (second_person = 0 OR second_person = 1),
  code_hash TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  tries INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL CHECK (state = 'pending' OR state = 'locked' OR state = 'confirmed'
    OR state = 'void' OR state = 'expired'),
  ended_reason TEXT,
  ended_at INTEGER,
  confirmer TEXT,
  confirmed_at INTEGER,
  totp_step INTEGER
);
CREATE INDEX bulk_requests_manifest ON bulk_requests (manifest, id);
