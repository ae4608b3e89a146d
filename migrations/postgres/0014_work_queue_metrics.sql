-- /metrics reads each work queue's figures on every scrape
-- (workItemsStats): its done items by outcome and its expired claims,
-- each an aggregate over a partial index of its own rather than a scan of
-- every item or every history entry.

CREATE INDEX work_items_done ON work_items (queue, outcome) WHERE state = 'done';
CREATE INDEX work_item_events_expired ON work_item_events (item_id) WHERE kind = 'expired';
