-- Flow control (issue 31): limits an operator stored for a queue (`jobs
-- queues set`), which override the schedules file's on every node, and the
-- token buckets of rate-limited queues and partitions, updated in the claim's
-- transaction. A NULL limit is not set: the file's applies.
CREATE TABLE queue_limits (
  name text PRIMARY KEY,
  global_limit integer CHECK (global_limit >= 1),
  partition_limit integer CHECK (partition_limit >= 1),
  rate_limit integer CHECK (rate_limit >= 1),
  rate_per bigint CHECK (rate_per >= 1),
  rate_burst integer CHECK (rate_burst >= 1),
  updated_at bigint NOT NULL
);

-- scope 'queue': the queue's own bucket (key ''); scope 'key': one partition's.
CREATE TABLE flow_buckets (
  queue text NOT NULL,
  scope text NOT NULL CHECK (scope IN ('queue', 'key')),
  key text NOT NULL,
  tokens double precision NOT NULL,
  refilled_at bigint NOT NULL,
  PRIMARY KEY (queue, scope, key)
);

-- The tenant each queue's round robin served last: the next claim starts after it.
CREATE TABLE flow_cursors (
  queue text PRIMARY KEY,
  key text NOT NULL
);

-- The executing rows of one queue, counted by every limited claim.
CREATE INDEX jobs_executing_queue ON jobs (queue) WHERE state = 'executing';

-- Whether tenants' jobs wait in a queue (its claim is then fair across
-- tenants): one probe of this index; jobs without a tenant are not in it.
CREATE INDEX jobs_available_tenant ON jobs (queue, tenant, priority, scheduled_at, id)
  WHERE state = 'available' AND tenant IS NOT NULL;

-- A claim of a queue whose only limit is `global` (declared, or stored), and
-- with no tenants' jobs waiting, in one call: the queue's flow lock, then
-- (each statement of a volatile function reads a snapshot of its own, so the
-- count sees the rows the claimer before took) the executing rows counted
-- and at most the free slots claimed, in claim order: the same decision as
-- decideFlow's (src/kernel/flow.ts) for this one limit. A row `full` says
-- the queue needs the whole limited claim (src/store/lifecycle/flow.ts):
-- another limit is stored, or tenants' jobs wait; a row `held` says the
-- limit left fewer slots than asked. `p_done` is the completions the
-- calling statement writes beside it ({"<id>": [fence, ...]}, this node's):
-- they end with it, so their slots are not counted, though its snapshot
-- still shows them executing.
CREATE FUNCTION jobs_flow_claim_global(p_queue text, p_node text, p_limit bigint,
    p_global bigint, p_due bigint, p_now bigint, p_lease bigint, p_done jsonb)
  RETURNS TABLE (flag text, id bigint, queue text, worker text, args text, meta text,
    tags text, occurrence text, attempt integer, max_attempts integer, priority integer,
    fence bigint, inserted_at bigint, scheduled_at bigint, attempted_at bigint,
    schedule_id text, tenant text, was text, state text)
  LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_limits queue_limits%ROWTYPE;
  v_global bigint := p_global;
  v_room bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(current_schema() || '/jobs.flow/' || p_queue, 0));
  SELECT * INTO v_limits FROM queue_limits AS l WHERE l.name = p_queue;
  IF v_limits.partition_limit IS NOT NULL OR v_limits.rate_limit IS NOT NULL
    OR EXISTS (SELECT 1 FROM jobs AS t
      WHERE t.state = 'available' AND t.queue = p_queue AND t.tenant IS NOT NULL) THEN
    RETURN QUERY SELECT 'full'::text, NULL::bigint, NULL::text, NULL::text, NULL::text,
      NULL::text, NULL::text, NULL::text, NULL::integer, NULL::integer, NULL::integer,
      NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::text, NULL::text,
      NULL::text, NULL::text;
    RETURN;
  END IF;
  v_global := coalesce(v_limits.global_limit, p_global);
  v_room := least(p_limit, v_global - (SELECT count(*) FROM jobs AS e
    WHERE e.state = 'executing' AND e.queue = p_queue
      AND NOT coalesce(e.attempted_by = p_node
        AND (p_done -> e.id::text ->> 0)::bigint = e.fence, false)));
  IF v_room < p_limit THEN
    RETURN QUERY SELECT 'held'::text, NULL::bigint, NULL::text, NULL::text, NULL::text,
      NULL::text, NULL::text, NULL::text, NULL::integer, NULL::integer, NULL::integer,
      NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::text, NULL::text,
      NULL::text, NULL::text;
  END IF;
  IF v_room <= 0 THEN
    RETURN;
  END IF;
  RETURN QUERY
    WITH picked AS (
      SELECT j.id FROM jobs AS j
      WHERE j.state = 'available' AND j.queue = p_queue AND j.scheduled_at <= p_due
        AND NOT EXISTS (SELECT 1 FROM queues AS q WHERE q.name = p_queue AND q.paused)
      ORDER BY j.priority, j.scheduled_at, j.id
      LIMIT v_room
      FOR UPDATE SKIP LOCKED)
    UPDATE jobs AS j SET state = 'executing', attempt = j.attempt + 1, fence = j.fence + 1,
      attempted_by = p_node, attempted_at = p_now, lease_expires_at = p_lease
    WHERE j.id = ANY(ARRAY(SELECT picked.id FROM picked))
    RETURNING 'job'::text, j.id, j.queue, j.worker, j.args, j.meta, j.tags, j.occurrence,
      j.attempt, j.max_attempts, j.priority, j.fence, j.inserted_at, j.scheduled_at,
      j.attempted_at, j.schedule_id, j.tenant, 'available'::text, 'executing'::text;
END;
$$;
