-- A limited claim without a token bucket in one call: what claimFlow
-- (src/store/lifecycle/flow.ts) reads and decideFlow (src/kernel/flow.ts)
-- decides for `global`, `partition` (by tenant, an arg or a meta key) and
-- the tenants' round robin, and the rows it takes, so the claim is one
-- round trip and one commit, as the plain claim is. The conformance tests
-- (test/store/conformance/flow_test.ts) and seeded random queues claimed
-- alike on both stores (test/store/flow_decisions_test.ts) hold the two to
-- the same decisions.
--
-- The queue's flow lock first; each later statement of a volatile function
-- reads a snapshot of its own, so the counts see the rows the claimer before
-- took. Then the limits stored (a stored rate: the row `full`, and the
-- caller runs the whole limited claim, buckets and all), the executing rows
-- per key, the runnable candidates (keyed by tenant: the first jobs of the
-- tenants whose turn it is, from the one after the tenant the last claim
-- served, and the queue's first `p_limit` jobs; keyed by an arg or a meta
-- key: each key's first `p_per`), the decision, the round robin's cursor,
-- and the take.
--
-- The decision, as decideFlow's with no bucket: a candidate's place is its
-- key's executing rows plus its rank within its key in claim order; a place
-- past the partition limit is not taken; the rest go by place, priority,
-- the key's turn, due time and id, as many as the free slots (the caller's,
-- and what `global` leaves). A row `held` says a limit kept runnable jobs
-- from the caller's slots; a row `shared`, that `global` applies (the
-- caller then claims no more than its free slots). Each flag is a row whose
-- other columns are NULL. `p_done` is the completions the calling
-- statement writes beside it ({"<id>": [fence, ...]}, this node's): they end
-- with it, so their slots are not counted, though its snapshot still shows
-- them executing. `ord` is the row's place in the decision.
--
-- It replaces jobs_flow_claim_global (0015), which stays for a daemon of the
-- version before that still claims while the others are replaced.
CREATE FUNCTION jobs_flow_claim(p_queue text, p_node text, p_limit bigint,
    p_by text, p_by_key text, p_global bigint, p_partition bigint, p_width bigint,
    p_per bigint, p_due bigint, p_now bigint, p_lease bigint, p_done jsonb)
  RETURNS TABLE (flag text, id bigint, queue text, worker text, args text, meta text,
    tags text, occurrence text, attempt integer, max_attempts integer, priority integer,
    fence bigint, inserted_at bigint, scheduled_at bigint, attempted_at bigint,
    schedule_id text, tenant text, was text, state text, ord integer)
  LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_limits queue_limits%ROWTYPE;
  v_global bigint;
  v_key_limit bigint;
  v_running jsonb;
  v_total bigint;
  v_room bigint;
  v_walk text[];
  v_ids bigint[];
  v_keys text[];
  v_prio integer[];
  v_due bigint[];
  v_take bigint[];
  v_took text[];
  v_n integer;
  v_served text;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(current_schema() || '/jobs.flow/' || p_queue, 0));
  SELECT * INTO v_limits FROM queue_limits AS l WHERE l.name = p_queue;
  IF v_limits.rate_limit IS NOT NULL THEN
    flag := 'full';
    RETURN NEXT;
    RETURN;
  END IF;
  v_global := coalesce(v_limits.global_limit, p_global);
  v_key_limit := coalesce(v_limits.partition_limit, p_partition);
  IF v_global IS NOT NULL THEN
    flag := 'shared';
    RETURN NEXT;
  END IF;

  -- The executing rows per key, less the completions written beside this call.
  SELECT coalesce(jsonb_object_agg(r.k, r.n), '{}'::jsonb), coalesce(sum(r.n), 0)
    INTO v_running, v_total
  FROM (SELECT coalesce(CASE p_by WHEN 'tenant' THEN e.tenant
        WHEN 'args' THEN e.args::jsonb ->> p_by_key ELSE e.meta::jsonb ->> p_by_key END,
        '') AS k, count(*) AS n
    FROM jobs AS e
    WHERE e.state = 'executing' AND e.queue = p_queue
      AND NOT coalesce(e.attempted_by = p_node
        AND (p_done -> e.id::text ->> 0)::bigint = e.fence, false)
    GROUP BY 1) AS r;
  v_room := CASE WHEN v_global IS NULL THEN p_limit ELSE least(p_limit, v_global - v_total) END;
  IF v_room <= 0 THEN
    flag := 'held';
    RETURN NEXT;
    RETURN;
  END IF;

  IF p_by = 'tenant' THEN
    -- The round robin's turn: up to p_width tenants with runnable jobs, from
    -- the one after the cursor round to it, each step the next tenant in
    -- index order (not min(), which a plan without statistics aggregates
    -- over every waiting job); each tenant's first jobs, at most its share
    -- of p_limit, and the queue's first p_limit jobs.
    WITH RECURSIVE
      cur AS (SELECT (SELECT f.key FROM flow_cursors AS f WHERE f.queue = p_queue) AS key),
      a(k) AS (
        SELECT (SELECT t.tenant FROM jobs AS t
          WHERE t.state = 'available' AND t.queue = p_queue
            AND t.tenant > (SELECT coalesce(cur.key, '') FROM cur)
          ORDER BY t.tenant LIMIT 1)
        UNION ALL
        SELECT (SELECT t.tenant FROM jobs AS t
          WHERE t.state = 'available' AND t.queue = p_queue AND t.tenant > a.k
          ORDER BY t.tenant LIMIT 1)
        FROM a WHERE a.k IS NOT NULL),
      b(k) AS (
        SELECT (SELECT t.tenant FROM jobs AS t
          WHERE t.state = 'available' AND t.queue = p_queue AND t.tenant IS NOT NULL
          ORDER BY t.tenant LIMIT 1)
        UNION ALL
        SELECT (SELECT t.tenant FROM jobs AS t
          WHERE t.state = 'available' AND t.queue = p_queue AND t.tenant > b.k
          ORDER BY t.tenant LIMIT 1)
        FROM b WHERE b.k IS NOT NULL AND b.k < (SELECT coalesce(cur.key, '') FROM cur)),
      walk AS MATERIALIZED (
        SELECT w.k, row_number() OVER (ORDER BY w.lap, w.k) AS turn FROM (
          (SELECT a.k, 0 AS lap FROM a WHERE a.k IS NOT NULL LIMIT p_width)
          UNION ALL
          (SELECT b.k, 1 FROM b
            WHERE b.k IS NOT NULL AND b.k <= (SELECT cur.key FROM cur)
            LIMIT p_width)) AS w
        ORDER BY w.lap, w.k LIMIT p_width),
      share AS (SELECT least(p_per, (p_limit + count(*) - 1) / greatest(1, count(*))) AS n
        FROM walk)
    SELECT (SELECT array_agg(walk.k ORDER BY walk.turn) FROM walk),
      array_agg(c.id), array_agg(c.k), array_agg(c.priority), array_agg(c.scheduled_at)
      INTO v_walk, v_ids, v_keys, v_prio, v_due
    FROM (
      (SELECT j.id, coalesce(j.tenant, '') AS k, j.priority, j.scheduled_at FROM jobs AS j
        WHERE j.state = 'available' AND j.queue = p_queue AND j.scheduled_at <= p_due
        ORDER BY j.priority, j.scheduled_at, j.id LIMIT p_limit)
      UNION
      SELECT j.id, j.tenant, j.priority, j.scheduled_at
      FROM walk AS w CROSS JOIN LATERAL (
        SELECT t.id, t.tenant, t.priority, t.scheduled_at FROM jobs AS t
        WHERE t.state = 'available' AND t.queue = p_queue AND t.tenant = w.k
          AND t.scheduled_at <= p_due
        ORDER BY t.priority, t.scheduled_at, t.id
        LIMIT (SELECT share.n FROM share)) AS j
    ) AS c
    WHERE NOT EXISTS (SELECT 1 FROM queues AS q WHERE q.name = p_queue AND q.paused);
  ELSE
    -- Each key's first p_per runnable jobs in claim order: a key read from
    -- args or meta has no index, so every runnable job of the queue is read.
    SELECT array_agg(c.id), array_agg(c.k), array_agg(c.priority), array_agg(c.scheduled_at)
      INTO v_ids, v_keys, v_prio, v_due
    FROM (
      SELECT r.id, r.k, r.priority, r.scheduled_at,
        row_number() OVER (PARTITION BY r.k ORDER BY r.priority, r.scheduled_at, r.id) AS n
      FROM (SELECT j.id, j.priority, j.scheduled_at,
          coalesce(CASE p_by WHEN 'args' THEN j.args::jsonb ->> p_by_key
            ELSE j.meta::jsonb ->> p_by_key END, '') AS k
        FROM jobs AS j
        WHERE j.state = 'available' AND j.queue = p_queue AND j.scheduled_at <= p_due
          AND NOT EXISTS (SELECT 1 FROM queues AS q WHERE q.name = p_queue AND q.paused)) AS r
    ) AS c
    WHERE c.n <= p_per;
  END IF;
  v_walk := coalesce(v_walk, '{}'::text[]);
  IF v_ids IS NULL THEN
    RETURN;
  END IF;

  SELECT array_agg(d.id ORDER BY d.place, d.priority, d.turn, d.due, d.id),
      array_agg(d.k ORDER BY d.place, d.priority, d.turn, d.due, d.id)
    INTO v_take, v_took
  FROM (
    SELECT r.* FROM (
      SELECT c.id, c.k, c.priority, c.due,
        coalesce(array_position(v_walk, c.k), 2147483647) AS turn,
        coalesce((v_running ->> c.k)::bigint, 0)
          + row_number() OVER (PARTITION BY c.k ORDER BY c.priority, c.due, c.id) AS place
      FROM unnest(v_ids, v_keys, v_prio, v_due) AS c(id, k, priority, due)) AS r
    WHERE v_key_limit IS NULL OR r.place <= v_key_limit
    ORDER BY r.place, r.priority, r.turn, r.due, r.id
    LIMIT v_room) AS d;
  v_n := coalesce(array_length(v_take, 1), 0);

  -- The round robin goes on after the last tenant served (past a window of
  -- tenants with no free slot, so it does not stick there).
  v_served := CASE WHEN v_n > 0
    THEN (SELECT w.k FROM unnest(v_walk) WITH ORDINALITY AS w(k, n)
      WHERE w.k = ANY(v_took) ORDER BY w.n DESC LIMIT 1)
    ELSE v_walk[array_length(v_walk, 1)] END;
  IF v_served IS NOT NULL THEN
    INSERT INTO flow_cursors AS f (queue, key) VALUES (p_queue, v_served)
      ON CONFLICT ON CONSTRAINT flow_cursors_pkey DO UPDATE SET key = excluded.key;
  END IF;
  IF v_n < p_limit AND (array_length(v_ids, 1) > v_n OR v_room < p_limit) THEN
    flag := 'held';
    RETURN NEXT;
  END IF;
  IF v_n = 0 THEN
    RETURN;
  END IF;
  -- By the primary key: the state is tested as an expression no partial
  -- index of available rows matches (a queue just filled has no statistics).
  RETURN QUERY
    UPDATE jobs AS j SET state = 'executing', attempt = j.attempt + 1, fence = j.fence + 1,
      attempted_by = p_node, attempted_at = p_now, lease_expires_at = p_lease
    WHERE j.id = ANY(v_take) AND coalesce(j.state, '') = 'available' AND j.queue = p_queue
    RETURNING 'job'::text, j.id, j.queue, j.worker, j.args, j.meta, j.tags, j.occurrence,
      j.attempt, j.max_attempts, j.priority, j.fence, j.inserted_at, j.scheduled_at,
      j.attempted_at, j.schedule_id, j.tenant, 'available'::text, 'executing'::text,
      array_position(v_take, j.id);
END;
$$;
