-- The tenant of an ingest run: the tenant of the principal that started it
-- (`POST /api/v1/pipelines/{name}/runs`, a drop's replay), copied from its
-- `jobs.ingest` job when the run's row is made; NULL for installation-wide
-- runs (a schedule's, the command line's). A tenant's principal reads its
-- tenant's runs, and the drops of those runs, only.

ALTER TABLE ingest_runs ADD COLUMN tenant text;
CREATE INDEX ingest_runs_tenant ON ingest_runs (tenant, pipeline, id) WHERE tenant IS NOT NULL;
