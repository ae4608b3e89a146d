-- People and tokens (src/admin/people.ts, src/admin/tokens.ts): who may act
-- through the daemon's doors. A person signs in with a password, a token is
-- a program's secret; both hold roles and an optional tenant. Only a hash
-- of the secret is kept (src/admin/secrets.ts writes it, with its
-- parameters): a scrypt string for a password, a SHA-256 for a token, found
-- by that hash (principals_token_secret).

CREATE TABLE principals (
  -- OR chains, not IN lists: see 0010_cheap_checks.sql.
  kind TEXT NOT NULL CHECK (kind = 'person' OR kind = 'token'),
  name TEXT NOT NULL,
  display_name TEXT,
  roles TEXT NOT NULL DEFAULT '[]',
  tenant TEXT,
  secret_hash TEXT NOT NULL,
  disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled = 0 OR disabled = 1),
  expires_at INTEGER,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_used_at INTEGER,
  PRIMARY KEY (kind, name)
);
CREATE UNIQUE INDEX principals_token_secret ON principals (secret_hash) WHERE kind = 'token';
