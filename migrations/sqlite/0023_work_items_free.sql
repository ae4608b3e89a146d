-- "Next" takes the best free item of a queue: an index of the open items
-- in the order people get them, with the unclaimed first, so the pick reads
-- its first entry instead of stepping over every held item. The lead time
-- of the Work tab reads a queue's items done since an instant.

CREATE INDEX work_items_free ON work_items (queue, state, claim_owner, score_rank DESC, requested_at, id);
CREATE INDEX work_items_done_at ON work_items (queue, state, done_at);
