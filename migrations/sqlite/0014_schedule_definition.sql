-- Each schedule's definition as the daemon last synced it (JSON), beside its
-- hash: while schedules.yaml has errors the daemon keeps running the last
-- good definitions, and the views show those (rhythm, zone, next) from here.
-- Null for a row synced by an older daemon, or not from a definition.

ALTER TABLE schedules ADD COLUMN definition TEXT;
