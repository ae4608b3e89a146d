/** @jsxRuntime classic */
/** @jsx h */
/** @jsxFrag Fragment */
/**
 * The Schedules pages: `/schedules`, every schedule in the person's scope
 * as the store last synced it (what the daemons run), with its rhythm in
 * words (as `jobs schedules` and the TUI say it), its zone and DST policy,
 * its next runs with their DST notes, its last planned, started and
 * completed instants, misfires and failures, and whether it is enabled (or
 * who disabled it, when and why); and `/schedules/:id`, one schedule in
 * detail: its next 10 runs (from `?from=`, an ISO instant, when given), its
 * policies, guard and `runs_where` beside the environments the live nodes
 * serve, its recent occurrences (each linking to its job's page, where it
 * is replayed), and the runbook's commands to paste (`src/admin/runbook.ts`,
 * the text `jobs runbook` prints).
 *
 * Actions, drawn for the roles that may take them and refused (403)
 * otherwise: Disable / Enable with a reason (`setScheduleEnabled`) and Run
 * now with a reason and, for a guarded schedule, the environment
 * (`runScheduleNow`, a refused guard shown as its message). Every read and
 * action passes the person's tenant to the door, so the store's statement
 * holds it: another tenant's schedule is a 404, as one that does not exist.
 *
 * @module
 */

import { mayTake } from "../admin/actions.ts";
import { iso } from "../admin/job_json.ts";
import { nodesView } from "../admin/nodes.ts";
import { type Procedure, runbookOf } from "../admin/runbook.ts";
import {
  failuresText,
  GuardRefused,
  OccurrenceExists,
  runScheduleNow,
  type ScheduleStatus,
  schedulesView,
  setScheduleEnabled,
  storedConfig,
  storedSchedules,
} from "../admin/schedules.ts";
import type { Principal } from "../http/access.ts";
import { redact } from "../kernel/redact.ts";
import type { Job } from "../kernel/types.ts";
import { misfireText, rhythmText, when } from "../schedule/describe.ts";
import { next } from "../schedule/occurrences.ts";
import type { Occurrence, Schedule } from "../schedule/types.ts";
import type { ScheduleRow } from "../store/store.ts";
import { formatDuration } from "../text/durations.ts";
import { errorPage } from "./error_page.tsx";
import {
  type ConsoleRouter,
  type Ctx,
  formReason,
  MAX_REASON,
  NAV_ORDER,
  type PageContent,
  pathTo,
  readForm,
} from "./common.ts";
import { Fragment, h } from "./jsx.ts";

/** How many next runs the list shows per schedule. */
export const LIST_NEXT = 3;
/** How many next runs a schedule's page shows. */
export const DETAIL_NEXT = 10;
/** How many of its newest occurrences a schedule's page lists. */
export const RECENT_OCCURRENCES = 20;
/** The program the runbook's commands name. */
const PROGRAM = "jobs";

/** A message on a page: the outcome of an action, or why it was refused. */
interface Notice {
  status?: PageContent["status"];
  error?: string;
  done?: unknown;
}

/** Registers the Schedules pages and their actions. */
export function registerSchedules(router: ConsoleRouter): void {
  router.nav({ path: "/schedules", label: "Schedules", order: NAV_ORDER.schedules });
  router.page("GET", "/schedules", async (c, p) => await listPage(router, c, p));
  router.page("GET", "/schedules/:id", async (c, p) => {
    const id = c.req.param("id") ?? "";
    const ran = c.req.query("ran");
    const done = ran !== undefined && /^\d{1,15}$/.test(ran)
      ? (
        <>
          Ran now: <a href={pathTo("/jobs", ran)}>job {ran}</a>.
        </>
      )
      : undefined;
    return await detailPage(router, c, p, id, done === undefined ? {} : { done });
  });

  for (const action of ["disable", "enable"] as const) {
    router.page("POST", `/schedules/:id/${action}`, async (c, p) => {
      const id = c.req.param("id") ?? "";
      if ((await rowOf(router, id, p)) === null) return await notFound(c, id);
      const form = await readForm(c);
      if (form === null) return await errorPage(c, 400, "The form could not be read.");
      const reason = formReason(form, true);
      if ("refused" in reason) {
        return await detailPage(router, c, p, id, { status: 400, error: reason.refused });
      }
      await setScheduleEnabled(
        router.store,
        id,
        action === "enable",
        router.who(p, reason.reason),
        null,
        p.tenant,
      );
      return c.redirect(pathTo("/schedules", id), 303);
    });
  }

  router.page("POST", "/schedules/:id/run", async (c, p) => {
    const id = c.req.param("id") ?? "";
    const row = await rowOf(router, id, p);
    if (row === null) return await notFound(c, id);
    const form = await readForm(c);
    if (form === null) return await errorPage(c, 400, "The form could not be read.");
    const reason = formReason(form, true);
    if ("refused" in reason) {
      return await detailPage(router, c, p, id, { status: 400, error: reason.refused });
    }
    const [schedule] = storedSchedules([row]);
    if (!schedule) {
      return await detailPage(router, c, p, id, { status: 409, error: NO_DEFINITION });
    }
    const environment = (form.get("environment") ?? "").trim();
    try {
      const result = await runScheduleNow(
        router.store,
        schedule,
        router.who(p, reason.reason),
        environment === "" ? null : environment,
        p.tenant,
      );
      return c.redirect(
        `${pathTo("/schedules", id)}?${new URLSearchParams({ ran: `${result.id}` })}`,
        303,
      );
    } catch (error) {
      if (error instanceof GuardRefused || error instanceof OccurrenceExists) {
        return await detailPage(router, c, p, id, {
          status: 409,
          error: `Refused: ${redact(error.message)}.`,
        });
      }
      throw error;
    }
  });
}

const NO_DEFINITION = "The store has no definition of this schedule this program can read " +
  "(a daemon syncs it from the schedules file).";

/** The stored row of `id` in the person's scope, or null (another tenant's is as missing). */
async function rowOf(router: ConsoleRouter, id: string, p: Principal): Promise<ScheduleRow | null> {
  if (id.length === 0 || id.length > 200) return null;
  const [row] = await router.store.schedulesList({
    ids: [id],
    ...(p.tenant === null ? {} : { tenant: p.tenant }),
  });
  return row ?? null;
}

async function notFound(c: Ctx, id: string): Promise<Response> {
  return await errorPage(c, 404, `No schedule ${JSON.stringify(id)} in the store.`);
}

// ---------------------------------------------------------------- the list

async function listPage(router: ConsoleRouter, c: Ctx, p: Principal): Promise<Response> {
  const { store } = router;
  const now = router.clock.now();
  const config = await storedConfig(store, p.tenant);
  const statuses = await schedulesView(store, config, now, p.tenant);
  const definitions = new Map((config?.schedules ?? []).map((s) => [s.id, s]));
  return await router.render(c, p, {
    title: "Schedules",
    body: (
      <>
        <p class="note">
          As the store last synced them from the schedules file: what the daemons run.
          {p.tenant === null ? null : ` Only tenant ${p.tenant}'s schedules are shown.`}
        </p>
        {statuses.length === 0
          ? <p class="note">No schedule in the store yet: a daemon syncs them from its file.</p>
          : (
            <div class="table-wrap">
              <table data-table="schedules" class="schedules">
                <thead>
                  <tr>
                    <th scope="col">Schedule</th>
                    <th scope="col">Rhythm</th>
                    <th scope="col">Zone and DST policy</th>
                    <th scope="col">Next runs</th>
                    <th scope="col">Last</th>
                    <th scope="col" class="num">Misfires</th>
                    <th scope="col">State</th>
                  </tr>
                </thead>
                <tbody>
                  {statuses.map((s) => (
                    <ScheduleRowView
                      key={s.id}
                      status={s}
                      schedule={definitions.get(s.id) ?? null}
                      now={now}
                    />
                  ))}
                </tbody>
              </table>
            </div>
          )}
      </>
    ),
  });
}

function ScheduleRowView(
  props: { status: ScheduleStatus; schedule: Schedule | null; now: number },
) {
  const { status: s, schedule, now } = props;
  const upcoming = schedule !== null && s.enabled && schedule.rhythm.kind !== "manual"
    ? next(schedule, now, LIST_NEXT)
    : [];
  return (
    <tr data-schedule={s.id}>
      <th scope="row">
        <a href={pathTo("/schedules", s.id)}>{s.id}</a>
      </th>
      <td>{schedule ? rhythmText(schedule) : <span class="note">no definition</span>}</td>
      <td>
        <Zone schedule={schedule} timezone={s.timezone} />
      </td>
      <td>
        {upcoming.length > 0
          ? (
            <ul class="runs">
              {upcoming.map((o) => (
                <NextRun
                  key={o.occurrence}
                  o={o}
                  zone={s.timezone}
                  now={now}
                />
              ))}
            </ul>
          )
          : <span class="note">{noNext(s)}</span>}
      </td>
      <td>
        <Lasts s={s} now={now} />
      </td>
      <td class="num">
        {s.misfires}
        {s.lastMisfireFor !== null
          ? <div class="note">last {when(s.lastMisfireFor, now)}</div>
          : null}
      </td>
      <td>
        <State s={s} now={now} />
      </td>
    </tr>
  );
}

/** Why a schedule shows no next run. */
function noNext(s: ScheduleStatus): string {
  if (s.manual) return "only when someone runs it";
  if (!s.enabled) return "none while disabled";
  return "none";
}

function Zone(props: { schedule: Schedule | null; timezone: string | null }) {
  const lt = props.schedule?.localTime;
  return (
    <>
      <span data-zone>{props.timezone ?? "-"}</span>
      {lt
        ? (
          <div class="note">
            gap {lt.gap}, overlap {lt.overlap}: <span class="why">{lt.reason}</span>
          </div>
        )
        : props.timezone === "UTC"
        ? <div class="note">UTC: no daylight saving</div>
        : null}
    </>
  );
}

function NextRun(props: { o: Occurrence; zone: string | null; now: number }) {
  const { o, zone, now } = props;
  return (
    <li>
      <time datetime={iso(o.at) ?? ""}>{when(o.at, now, zone, false)}</time>
      {o.note ? <span class="badge warn dst" data-dst-note>{o.note}</span> : null}
    </li>
  );
}

function Lasts(props: { s: ScheduleStatus; now: number }) {
  const { s, now } = props;
  return (
    <dl class="lasts">
      <dt>planned</dt>
      <dd>{when(s.lastPlannedFor, now)}</dd>
      <dt>started</dt>
      <dd>{when(s.lastStartedAt, now)}</dd>
      <dt>completed</dt>
      <dd>{when(s.lastCompletedAt, now)}</dd>
      {s.failures > 0
        ? (
          <>
            <dt>failing</dt>
            <dd class="bad">{failuresText(s.failures)}</dd>
          </>
        )
        : null}
    </dl>
  );
}

function State(props: { s: ScheduleStatus; now: number }) {
  const { s, now } = props;
  if (s.enabled) return <span class="badge good" data-state="enabled">enabled</span>;
  return (
    <>
      <span class="badge warn" data-state="disabled">disabled</span>{" "}
      {s.disabledIn === "file" ? <span class="note">in the file</span> : (
        <>
          <span data-disabled-by>by {s.disabledBy ?? "unknown"}</span>{" "}
          <span class="note">{when(s.disabledAt, now)}</span>
          <div class="why" data-disabled-why>{s.disabledReason ?? "no reason given"}</div>
        </>
      )}
    </>
  );
}

// ---------------------------------------------------------------- one schedule

async function detailPage(
  router: ConsoleRouter,
  c: Ctx,
  p: Principal,
  id: string,
  notice: Notice,
): Promise<Response> {
  const { store } = router;
  const row = await rowOf(router, id, p);
  if (row === null) return await notFound(c, id);
  const now = router.clock.now();
  const tenant = p.tenant === null ? {} : { tenant: p.tenant };
  const [schedule] = storedSchedules([row]);
  const config = await storedConfig(store, p.tenant);
  const status = (await schedulesView(store, config, now, p.tenant)).find((s) => s.id === id);
  if (status === undefined) return await notFound(c, id);
  const from = fromQuery(c.req.query("from"));
  const upcoming = schedule && schedule.rhythm.kind !== "manual"
    ? next(schedule, from ?? now, DETAIL_NEXT)
    : [];
  const recent = (await store.jobsList({
    scheduleId: id,
    desc: true,
    limit: RECENT_OCCURRENCES,
    ...tenant,
  })).filter((j) => j.scheduleId === id);
  const nodes = (await nodesView(store, now)).filter((n) => !n.stale);
  const environments = [...new Set(nodes.map((n) => n.environment ?? "(not set)"))].sort();
  const book = schedule ? runbookOf(schedule, status, recent[0] ?? null, {}, PROGRAM) : null;
  const acts = mayTake(p.roles, "schedule.disable");
  const runs = mayTake(p.roles, "schedule.run");
  return await router.render(c, p, {
    title: `Schedule ${id}`,
    ...(notice.status ? { status: notice.status } : {}),
    body: (
      <>
        {notice.error ? <p class="message error" role="alert">{notice.error}</p> : null}
        {notice.done ? <p class="message done" role="status">{notice.done}</p> : null}
        <p>
          <a href="/schedules">All schedules</a>
        </p>
        <section aria-labelledby="about" class="schedule-about">
          <h2 id="about">How it runs</h2>
          <dl class="facts">
            <dt>Rhythm</dt>
            <dd data-rhythm>{schedule ? rhythmText(schedule) : "no definition in the store"}</dd>
            <dt>Zone</dt>
            <dd>
              <Zone schedule={schedule ?? null} timezone={status.timezone} />
            </dd>
            {schedule
              ? (
                <>
                  {schedule.rhythm.kind === "manual" ? null : (
                    <>
                      <dt>Misfires</dt>
                      <dd>
                        {misfireText(schedule)}, grace {formatDuration(schedule.misfire.graceMs)};
                        {" "}
                        {status.misfires} so far
                        {status.lastMisfireFor === null
                          ? ""
                          : `, the last for ${when(status.lastMisfireFor, now)}`}
                      </dd>
                    </>
                  )}
                  <dt>Overlap</dt>
                  <dd>{schedule.overlapPolicy}</dd>
                  <dt>Queue</dt>
                  <dd>{schedule.queue}</dd>
                  {schedule.tenant
                    ? (
                      <>
                        <dt>Tenant</dt>
                        <dd>{schedule.tenant}</dd>
                      </>
                    )
                    : null}
                </>
              )
              : null}
            <dt>State</dt>
            <dd>
              <State s={status} now={now} />
            </dd>
            <dt>Last</dt>
            <dd>
              <Lasts s={status} now={now} />
            </dd>
          </dl>
        </section>
        {schedule && (schedule.guard !== undefined || schedule.runsWhere !== undefined)
          ? (
            <section aria-labelledby="guard">
              <h2 id="guard">Guard</h2>
              <dl class="facts">
                <dt>Guard</dt>
                <dd data-guard>{schedule.guard ?? "none given"}</dd>
                <dt>Runs where</dt>
                <dd data-runs-where>{schedule.runsWhere ?? "anywhere"}</dd>
                <dt>Live nodes serve</dt>
                <dd data-environments>
                  {environments.length === 0 ? "no live node" : environments.join(", ")}
                </dd>
              </dl>
            </section>
          )
          : null}
        <section aria-labelledby="next">
          <h2 id="next">Next runs</h2>
          <form method="get" action={pathTo("/schedules", id)} class="filters">
            <label for="from">From (ISO instant)</label>
            <input
              id="from"
              name="from"
              value={from === null ? "" : iso(from) ?? ""}
              placeholder="2027-03-27T00:00:00Z"
              maxlength={64}
            />
            <button type="submit">Show</button>
          </form>
          {upcoming.length === 0
            ? <p class="note">{schedule ? noNext(status) : NO_DEFINITION}</p>
            : (
              <div class="table-wrap">
                <table data-table="next">
                  <thead>
                    <tr>
                      <th scope="col">When (UTC)</th>
                      <th scope="col">Wall time in its zone</th>
                      <th scope="col">Daylight saving</th>
                    </tr>
                  </thead>
                  <tbody>
                    {upcoming.map((o) => (
                      <tr key={o.occurrence}>
                        <td>
                          <time datetime={iso(o.at) ?? ""}>{when(o.at, now)}</time>
                        </td>
                        <td>{o.local}</td>
                        <td>
                          {o.note
                            ? <span class="badge warn dst" data-dst-note>{o.note}</span>
                            : <span class="note">-</span>}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          {schedule && !status.enabled && upcoming.length > 0
            ? <p class="note">Disabled: these run only once it is enabled again.</p>
            : null}
        </section>
        {acts || runs
          ? (
            <section aria-labelledby="actions">
              <h2 id="actions">Actions</h2>
              <div class="actions">
                {acts ? <ToggleForm status={status} /> : null}
                {runs && schedule ? <RunForm schedule={schedule} /> : null}
              </div>
            </section>
          )
          : null}
        <section aria-labelledby="recent">
          <h2 id="recent">Recent occurrences</h2>
          {recent.length === 0
            ? <p class="note">No occurrence in the store yet.</p>
            : <Occurrences jobs={recent} now={now} />}
        </section>
        {book
          ? (
            <section aria-labelledby="runbook">
              <h2 id="runbook">Runbook</h2>
              {book.procedures.map((procedure) => (
                <RunbookProcedure key={procedure.title} procedure={procedure} />
              ))}
            </section>
          )
          : null}
      </>
    ),
  });
}

function Occurrences(props: { jobs: Job[]; now: number }) {
  return (
    <div class="table-wrap">
      <table data-table="occurrences">
        <thead>
          <tr>
            <th scope="col">Job</th>
            <th scope="col">Occurrence</th>
            <th scope="col">State</th>
            <th scope="col" class="num">Attempt</th>
            <th scope="col">Planned for</th>
            <th scope="col">Replay</th>
          </tr>
        </thead>
        <tbody>
          {props.jobs.map((j) => (
            <tr key={j.id}>
              <th scope="row">
                <a href={pathTo("/jobs", j.id)}>{j.id}</a>
              </th>
              <td>{j.occurrence ?? "-"}</td>
              <td>{j.state}</td>
              <td class="num">{j.attempt}/{j.maxAttempts}</td>
              <td>{when(j.scheduledFor, props.now)}</td>
              <td>
                <a href={pathTo("/jobs", j.id)} data-replay>replay from its page</a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function ToggleForm(props: { status: ScheduleStatus }) {
  const { status } = props;
  const action = status.enabled ? "disable" : "enable";
  return (
    <form method="post" action={pathTo("/schedules", status.id, action)} class="action">
      <label for="toggle-reason">Why {action} it</label>
      <input id="toggle-reason" name="reason" required maxlength={MAX_REASON} />
      <button type="submit" data-action={action}>{status.enabled ? "Disable" : "Enable"}</button>
      {status.disabledIn === "file"
        ? <p class="note">Disabled in the schedules file: enabling here does not override it.</p>
        : null}
    </form>
  );
}

function RunForm(props: { schedule: Schedule }) {
  const { schedule } = props;
  const guarded = schedule.rhythm.kind === "manual" || schedule.runsWhere !== undefined;
  return (
    <form method="post" action={pathTo("/schedules", schedule.id, "run")} class="action">
      <label for="run-reason">Why run it now</label>
      <input id="run-reason" name="reason" required maxlength={MAX_REASON} />
      {guarded
        ? (
          <>
            <label for="run-environment">Environment</label>
            <input
              id="run-environment"
              name="environment"
              maxlength={200}
              placeholder={schedule.runsWhere ?? ""}
            />
            <p class="note">
              Where this runs: it must be{" "}
              {JSON.stringify(schedule.runsWhere ?? "")}, its runs_where.
            </p>
          </>
        )
        : null}
      <button type="submit" data-action="run">Run now</button>
    </form>
  );
}

function RunbookProcedure(props: { procedure: Procedure }) {
  const { procedure } = props;
  return (
    <div class="procedure">
      <h3>{procedure.title}</h3>
      {procedure.notes.map((note, i) => <p key={i} class="note">{note}</p>)}
      {procedure.commands.length > 0
        ? <pre class="paste"><code>{procedure.commands.join("\n")}</code></pre>
        : null}
    </div>
  );
}

/** `?from=`: an ISO instant with an offset, or null (absent or unreadable). */
function fromQuery(text: string | undefined): number | null {
  if (text === undefined || text === "" || text.length > 64) return null;
  try {
    return Temporal.Instant.from(text).epochMilliseconds;
  } catch {
    return null;
  }
}
