/**
 * Reading jobs, on every backend: jobsList() filters (schedule, occurrence, a
 * case-insensitive search of what a reader is shown, never a redacted
 * secret), keyset paging in both directions, the errors an unknown filter
 * gets, and workersList().
 */

import assert from "node:assert/strict";
import type { JobState } from "../../../src/kernel/types.ts";
import type { JobFilter, Store } from "../../../src/store/store.ts";
import { BACKENDS, harnessTest } from "../../support/backends.ts";
import { claim, claimOne, insert, newJob, retryable, T0 } from "./helpers.ts";

for (const backend of BACKENDS) {
  const test = harnessTest(backend, T0);

  test("jobsList() filters by schedule, occurrence and a case-insensitive search", async ({ store }) => {
    const [nightly, hourly, mail, tagged, failed, percent] = await insert(store, [
      newJob({ occurrence: "nightly@2026-01-01T00:00:00.000Z", scheduleId: "nightly" }),
      newJob({ occurrence: "hourly@2026-01-01T00:00:00.000Z", scheduleId: "hourly" }),
      newJob({ worker: "SendMail", args: `{"to":"a@example.com"}` }),
      newJob({ tags: `["Billing","eu"]` }),
      newJob({ maxAttempts: 1, priority: 9 }),
      newJob({ args: `{"rate":"100%_off"}` }),
    ]);
    const job = await claimOne(store, { queue: "default" });
    assert.equal(job.id, nightly);
    const last = await claim(store, { limit: 10 });
    const failing = last.find((j) => j.id === failed)!;
    await store.jobsRecord({
      node: "node-a",
      now: T0,
      results: [{
        ...retryable(failing, T0),
        outcome: "discarded",
        error: "Timeout Talking To S3",
      }],
    });
    const ids = async (filter: Parameters<Store["jobsList"]>[0]) =>
      (await store.jobsList(filter)).map((j) => j.id);

    assert.deepEqual(await ids({ scheduleId: "nightly" }), [nightly]);
    assert.deepEqual(await ids({ occurrence: "hourly@2026-01-01T00:00:00.000Z" }), [hourly]);
    assert.deepEqual(await ids({ occurrence: "hourly" }), []);
    assert.deepEqual(await ids({ search: "sendmail" }), [mail]);
    assert.deepEqual(await ids({ search: "EXAMPLE.com" }), [mail]);
    assert.deepEqual(await ids({ search: "billing" }), [tagged]);
    assert.deepEqual(await ids({ search: "talking to s3" }), [failed]);
    assert.deepEqual(await ids({ search: "HOURLY@" }), [hourly]);
    // % and _ are literal, not wildcards.
    assert.deepEqual(await ids({ search: "0%_o" }), [percent]);
    assert.deepEqual(await ids({ search: "%" }), [percent]);
    assert.deepEqual(await ids({ search: "_" }), [percent]);
    assert.deepEqual(await ids({ search: "\\" }), []);
    assert.deepEqual(await ids({ search: "@", scheduleId: "hourly" }), [hourly]);
    assert.deepEqual(await ids({ search: "@", desc: true, limit: 2 }), [mail, hourly]);
  });

  test("jobsList() searches tags and errors for text JSON escapes (quotes, backslashes, newlines)", async ({ store }) => {
    const [quoted, slashed, plain] = await insert(store, [
      newJob({ tags: JSON.stringify(['say "hi"']) }),
      newJob({ tags: JSON.stringify(["C:\\temp"]) }),
      newJob({ tags: JSON.stringify(["hi"]) }),
    ]);
    const [failing] = await insert(store, [newJob()]);
    await store.jobsDiscard({ ids: [failing!], now: T0, reason: 'line one\nsaid "no"' });
    const ids = async (search: string) => (await store.jobsList({ search })).map((j) => j.id);
    assert.deepEqual(await ids('"hi"'), [quoted]);
    assert.deepEqual(await ids("hi"), [quoted, plain]);
    assert.deepEqual(await ids(":\\t"), [slashed]);
    assert.deepEqual(await ids('one\nsaid "NO"'), [failing]);
    assert.deepEqual(await ids("said"), [failing]);
  });

  test("jobsList() and jobsCountMatching() search what a reader is shown, never a redacted secret", async ({ store }) => {
    const [argv, keyed, contact, failing] = await insert(store, [
      newJob({ args: JSON.stringify({ argv: ["deploy", "password=PASS-222"] }) }),
      newJob({ args: JSON.stringify({ password: "PASS-333" }) }),
      newJob({ args: JSON.stringify({ note: "contact the PASS-2 desk" }) }),
      newJob(),
    ]);
    // An error stored before `pass=` was a secret name: shown redacted all the same.
    await store.jobsDiscard({ ids: [failing!], now: T0, reason: "login with pass=PASS-444" });
    const ids = async (search: string, more: Omit<JobFilter, "search"> = {}) =>
      (await store.jobsList({ ...more, search })).map((j) => j.id);
    const found: [string, (number | undefined)[]][] = [
      ["PASS-2", [contact]],
      ["PASS-222", []],
      ["PASS-333", []],
      ["PASS-444", []],
      ["password", [argv, keyed]],
      ["password=", [argv]],
      ["pass=", [failing]],
      ["[REDACTED]", [argv, keyed, failing]],
      ["password=[REDACTED]", [argv]],
      ['"password":"[REDACTED]"', [keyed]],
      ["d=[red", [argv]],
      ["acted]", [argv, keyed, failing]],
      // "act" is in "contact" and in every [REDACTED] a reader sees.
      ["act", [argv, keyed, contact, failing]],
    ];
    for (const [search, expected] of found) {
      assert.deepEqual(await ids(search), expected, search);
      assert.equal(await store.jobsCountMatching({ search }), expected.length, `${search} counted`);
    }
    assert.deepEqual(await ids("act", { desc: true, limit: 2 }), [failing, contact]);
    assert.deepEqual(await ids("act", { desc: true, limit: 2, after: contact }), [keyed, argv]);
    assert.equal(await store.jobsCountMatching({ search: "act" }, { atMost: 3 }), 3);
  });

  test("a search pages past rows whose stored text matches and whose shown text does not", async ({ store }) => {
    // Ids 1-250: every tenth says "PASS-2" where a reader sees it, the others only in a secret.
    const jobs = Array.from({ length: 250 }, (_, n) =>
      newJob({
        args: JSON.stringify(
          n % 10 === 9 ? { note: `PASS-2 shown ${n}` } : { argv: [`password=PASS-2${n}`] },
        ),
      }));
    const ids = await insert(store, jobs);
    const shown = ids.filter((_, n) => n % 10 === 9);
    for (const desc of [false, true]) {
      const expected = desc ? [...shown].reverse() : shown;
      const paged: number[] = [];
      let after: number | undefined;
      for (let page = 0; page < 50; page++) {
        const rows = await store.jobsList({ search: "pass-2", desc, limit: 4, after });
        paged.push(...rows.map((j) => j.id));
        if (rows.length < 4) break;
        after = rows.at(-1)!.id;
      }
      assert.deepEqual(paged, expected, desc ? "desc" : "asc");
    }
    assert.equal(await store.jobsCountMatching({ search: "PASS-2" }), 25);
    assert.equal(await store.jobsCountMatching({ search: "PASS-2" }, { atMost: 7 }), 7);
    assert.equal(await store.jobsCountMatching({ search: "PASS-2", above: ids[199] }), 5);
  });

  test("jobsList() pages with after: each job exactly once, in order, asc and desc, any filter", async ({ store }) => {
    const queues = ["default", "mail", "reports"];
    const ids = await insert(
      store,
      Array.from({ length: 41 }, (_, n) =>
        newJob({
          queue: queues[n % 3],
          args: JSON.stringify({ n, note: n % 5 === 0 ? "needle" : "hay" }),
          scheduleId: n % 4 === 0 ? "nightly" : null,
          occurrence: n % 4 === 0 ? `nightly@${new Date(T0 + n * 60_000).toISOString()}` : null,
        })),
    );
    await store.jobsDiscard({ ids: ids.filter((_, n) => n % 6 === 1), now: T0, reason: "poison" });
    await store.jobsCancel({ ids: ids.filter((_, n) => n % 7 === 2), now: T0, reason: "stop" });
    await claim(store, { queue: "mail", limit: 4 });
    const all = await store.jobsList({});
    assert.deepEqual(all.map((j) => j.id), ids, "the whole list, oldest first");

    const filters: [Parameters<Store["jobsList"]>[0], (j: (typeof all)[number]) => boolean][] = [
      [{}, () => true],
      [{ state: "discarded" }, (j) => j.state === "discarded"],
      [{ state: "cancelled", queue: "mail" }, (j) => j.state === "cancelled" && j.queue === "mail"],
      [{ state: ["available", "executing"] }, (j) => ["available", "executing"].includes(j.state)],
      [{ queue: "reports" }, (j) => j.queue === "reports"],
      [{ scheduleId: "nightly" }, (j) => j.scheduleId === "nightly"],
      [{ search: "NEEDLE" }, (j) => (j.args as { note: string }).note === "needle"],
      [
        { state: "discarded", search: "needle" },
        (j) => j.state === "discarded" && (j.args as { note: string }).note === "needle",
      ],
    ];
    for (const [filter, keep] of filters) {
      for (const desc of [false, true]) {
        const expected = all.filter(keep).map((j) => j.id);
        if (desc) expected.reverse();
        assert.ok(expected.length > 0, `${JSON.stringify(filter)} matches something`);
        const what = `${JSON.stringify(filter)}${desc ? " desc" : ""}`;
        assert.deepEqual(
          (await store.jobsList({ ...filter, desc })).map((j) => j.id),
          expected,
          what,
        );
        const paged: number[] = [];
        let after: number | undefined;
        for (let page = 0; page < 50; page++) {
          const rows = await store.jobsList({ ...filter, desc, limit: 3, after });
          paged.push(...rows.map((j) => j.id));
          if (rows.length < 3) break;
          after = rows.at(-1)!.id;
        }
        assert.deepEqual(paged, expected, `${what}, paged by 3`);
      }
    }
    // Past the end, and from an id that is not a job: still in order.
    assert.deepEqual(await store.jobsList({ after: ids.at(-1)!, limit: 3 }), []);
    assert.deepEqual(
      (await store.jobsList({ desc: true, after: ids.at(-1)! + 1000, limit: 2 })).map((j) => j.id),
      ids.slice(-2).reverse(),
    );
  });

  test("jobsList() refuses an unknown state and an after that is not an id, naming them", async ({ store }) => {
    await assert.rejects(
      store.jobsList({ state: "finished" as JobState }),
      (e: Error) => e instanceof RangeError && /state must be one of .*"finished"/.test(e.message),
    );
    await assert.rejects(
      store.jobsList({ after: 1.5 }),
      (e: Error) => e instanceof RangeError && /after must be a job id .*1\.5/.test(e.message),
    );
  });

  test("jobsList() and jobsCountMatching() keep to one tenant's jobs with tenant, by any other filter", async ({ store }) => {
    const [acme1, globex, none, acme2] = await insert(store, [
      newJob({ tenant: "acme", worker: "send" }),
      newJob({ tenant: "globex", worker: "send" }),
      newJob({ worker: "send" }),
      newJob({ tenant: "acme", worker: "bill", tags: `["eu"]` }),
    ]);
    const ids = async (filter: JobFilter) => (await store.jobsList(filter)).map((j) => j.id);
    assert.deepEqual(await ids({ tenant: "acme" }), [acme1, acme2]);
    assert.deepEqual(await ids({ tenant: "globex" }), [globex]);
    assert.deepEqual(await ids({}), [acme1, globex, none, acme2]);
    assert.deepEqual(await ids({ tenant: "acme", ids: [globex!, acme1!] }), [acme1]);
    assert.deepEqual(await ids({ tenant: "acme", ids: [globex!] }), []);
    assert.deepEqual(await ids({ tenant: "acme", worker: "send" }), [acme1]);
    assert.deepEqual(await ids({ tenant: "acme", state: "available", desc: true, limit: 1 }), [
      acme2,
    ]);
    assert.deepEqual(await ids({ tenant: "acme", search: "SEND" }), [acme1]);
    assert.deepEqual(await ids({ tenant: "acme", tag: "eu" }), [acme2]);
    assert.deepEqual(await ids({ tenant: "umbrella" }), []);
    assert.equal(await store.jobsCountMatching({ tenant: "acme" }), 2);
    assert.equal(await store.jobsCountMatching({ tenant: "acme", state: "available" }), 2);
    assert.equal(await store.jobsCountMatching({ tenant: "globex", search: "send" }), 1);
    assert.equal(none! > 0, true);
  });

  test("workersList() names each worker the jobs use once, by name", async ({ store }) => {
    assert.deepEqual(await store.workersList(), []);
    await store.jobsInsert({
      jobs: ["send", "mailer", "send", "jobs.command"].map((worker) => newJob({ worker })),
      now: T0,
    });
    assert.deepEqual(await store.workersList(), ["jobs.command", "mailer", "send"]);
  });
}
