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
