-- One customer's ledger for a date range, a page at a time: every value is
-- bound by the engine (:tenant and :actor from the request, :from and :to
-- from --param, :after_key and :page_size per page), never spliced.
-- `id > coalesce(:after_key, -1)`, not `(:after_key IS NULL OR id > ...)`:
-- SQLite uses the key's index for the first form only, and a scan from
-- the start for every page of the second (20x slower on a million rows).
SELECT id, booked_at, description, amount
FROM ledger
WHERE tenant = :tenant
  AND booked_at >= :from AND booked_at < :to
  AND id > coalesce(:after_key, -1)
ORDER BY id
LIMIT :page_size
