-- People and tokens (src/admin/people.ts, src/admin/tokens.ts): who may act
-- through the daemon's doors. A person signs in with a password, a token is
-- a program's secret; both hold roles and an optional tenant. Only a hash
-- of the secret is kept (src/admin/secrets.ts writes it, with its
-- parameters): a scrypt string for a password, a SHA-256 for a token, found
-- by that hash (principals_token_secret).

CREATE TABLE principals (
  kind text NOT NULL CHECK (kind IN ('person', 'token')),
  name text NOT NULL,
  display_name text,
  roles jsonb NOT NULL DEFAULT '[]',
  tenant text,
  secret_hash text NOT NULL,
  disabled boolean NOT NULL DEFAULT false,
  expires_at bigint,
  created_by text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  last_used_at bigint,
  PRIMARY KEY (kind, name)
);
CREATE UNIQUE INDEX principals_token_secret ON principals (secret_hash) WHERE kind = 'token';
