-- "Next" for everyone pressing it at once (src/store/postgres/work_items.ts
-- gathers the presses that arrive while one is in flight): the queue's
-- lapsed claims cleared and recorded `expired`, then for each person in
-- order the best free open item they have not skipped, claimed with a fence
-- one higher, its `claimed` history row and its audit row written: what
-- nextItem (src/store/lifecycle/work_items.ts) decides for one person, in
-- one statement and one commit for all of them. Each pick sees the claims
-- made before it, so two people never get one item; other transactions'
-- locked rows are skipped, so racing daemons do not wait on each other.
--
-- p_people: [{person, now, expires_at, audit: {actor, action, reason,
-- details} | null}, ...] in the order pressed; p_now the earliest of their
-- instants (a claim lapsed for everyone). Returns the items claimed, in the
-- people's order, each owned by its person.

CREATE FUNCTION work_items_next(p_queue text, p_tenant text, p_now bigint, p_people jsonb)
  RETURNS SETOF work_items
  LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_press record;
  v_id bigint;
  v_item work_items%ROWTYPE;
BEGIN
  WITH lapsed AS (
      SELECT w.id, w.claim_owner, w.claim_expires_at FROM work_items AS w
      WHERE w.claim_owner IS NOT NULL AND w.claim_expires_at <= p_now AND w.queue = p_queue
      ORDER BY w.claim_expires_at, w.id LIMIT 1000
      FOR UPDATE SKIP LOCKED),
    cleared AS (
      UPDATE work_items AS w SET claim_owner = NULL, claim_expires_at = NULL
      FROM lapsed WHERE w.id = lapsed.id
      RETURNING w.id, lapsed.claim_owner AS owner, w.claim_fence AS fence,
        lapsed.claim_expires_at AS expired_at)
  INSERT INTO work_item_events (item_id, at, actor, kind, reason, fence, detail)
  SELECT c.id, p_now, 'jobs', 'expired', NULL, c.fence,
    jsonb_build_object('owner', c.owner, 'expiredAt', c.expired_at)
  FROM cleared AS c ORDER BY c.expired_at, c.id;

  FOR v_press IN
    SELECT x.e ->> 'person' AS person, (x.e ->> 'now')::bigint AS now,
      (x.e ->> 'expires_at')::bigint AS expires_at, x.e -> 'audit' AS audit
    FROM jsonb_array_elements(p_people) WITH ORDINALITY AS x(e, n)
    ORDER BY x.n
  LOOP
    SELECT w.id INTO v_id FROM work_items AS w
    WHERE w.queue = p_queue AND w.state = 'open'
      AND (p_tenant IS NULL OR w.tenant = p_tenant)
      AND w.claim_owner IS NULL
      AND NOT (w.skipped_by IS NOT NULL AND w.skipped_by = v_press.person
        AND w.skipped_until > v_press.now)
    ORDER BY w.score_rank DESC NULLS LAST, w.requested_at, w.id
    LIMIT 1 FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN v_id IS NULL;
    UPDATE work_items AS w SET claim_owner = v_press.person,
        claim_expires_at = v_press.expires_at, claim_fence = w.claim_fence + 1
      WHERE w.id = v_id AND w.claim_owner IS NULL
      RETURNING w.* INTO v_item;
    CONTINUE WHEN NOT FOUND;
    INSERT INTO work_item_events (item_id, at, actor, kind, reason, fence, detail)
    VALUES (v_item.id, v_press.now, v_press.person, 'claimed', NULL, v_item.claim_fence,
      jsonb_build_object('expiresAt', v_item.claim_expires_at, 'by', 'next'));
    IF v_press.audit IS NOT NULL AND jsonb_typeof(v_press.audit) = 'object' THEN
      INSERT INTO audit (at, actor, action, target, reason, details)
      VALUES (v_press.now, v_press.audit ->> 'actor', v_press.audit ->> 'action',
        'work:' || v_item.queue || '/' || v_item.key, v_press.audit ->> 'reason',
        (coalesce(v_press.audit -> 'details', '{}'::jsonb) || jsonb_build_object('key', v_item.key,
          'fence', v_item.claim_fence, 'expiresAt', v_item.claim_expires_at))::text);
    END IF;
    RETURN NEXT v_item;
  END LOOP;
END $$;
