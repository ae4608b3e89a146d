-- The web console's sessions (src/admin/sessions.ts): a person signed in
-- through a browser. Only the SHA-256 of the session's opaque id is kept
-- (id_hash, hex); the id itself lives only in the browser's cookie. A
-- session ends at expires_at (absolute) or once idle past the console's
-- idle timeout (last_seen_at), whichever comes first.

CREATE TABLE sessions (
  id_hash TEXT PRIMARY KEY,
  person TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  address TEXT,
  user_agent TEXT
);
CREATE INDEX sessions_person ON sessions (person);
CREATE INDEX sessions_expires ON sessions (expires_at);
