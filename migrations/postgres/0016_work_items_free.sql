-- "Next" takes the best free item of a queue: a partial index of the
-- unclaimed open items in the order people get them, so the pick reads its
-- first entry instead of stepping over every held item. The lead time of
-- the Work tab reads a queue's items done since an instant.

CREATE INDEX work_items_free ON work_items (queue, score_rank DESC NULLS LAST, requested_at, id)
  WHERE state = 'open' AND claim_owner IS NULL;
CREATE INDEX work_items_done_at ON work_items (queue, done_at) WHERE state = 'done';
