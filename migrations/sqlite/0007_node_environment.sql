-- Where each node runs (the daemon's --environment), written with its
-- heartbeat: `jobs status` shows it, and `jobs run` of a manual schedule
-- guarded by runs_where warns when no live node serves that environment.
-- NULL for a node that did not say (and for rows from before this change).
ALTER TABLE nodes ADD COLUMN environment TEXT;
