/** @jsxRuntime classic */
/** @jsx h */
/** @jsxFrag Fragment */
/**
 * The Job page at `/jobs/:id`: one job of the principal's scope (another
 * tenant's job is the same 404 page as a missing one) with what `jobs
 * show` prints: every field, args and meta redacted, tags, the attempts
 * with fence, node, kind, actor, reason, outcome, error and the definition
 * each ran, the output tail, and the audit rows; the definition the job
 * was planned with and what a replay would run (live, as the store last
 * synced its schedule, or as planned, and what differs: `previewReplay`).
 *
 * The actions its state allows (`planJobAction`), drawn only for a person
 * whose roles take them: retry, cancel and discard with a reason
 * (`POST /jobs/:id/retry|cancel|discard`, through `applyJobAction`), and
 * replay with the definition choice and a reason (`POST /jobs/:id/replay`,
 * through `replayJob`; the console has no schedules file, so a live replay
 * takes the definitions the store last synced, as `/api/v1` does).
 *
 * @module
 */

import { mayTake } from "../admin/actions.ts";
import { type DefinitionChoice, definitionText, shortHash } from "../admin/definitions.ts";
import {
  applyJobAction,
  AS_PLANNED,
  type DefinitionSource,
  type JobAction,
  type JobDetail,
  jobDetailInScope,
  jobInScope,
  planJobAction,
  previewReplay,
  replayJob,
} from "../admin/jobs.ts";
import { storedLiveSchedules } from "../admin/schedules.ts";
import type { Principal } from "../http/access.ts";
import { redact } from "../kernel/redact.ts";
import { runSettingsOf } from "../kernel/run_settings.ts";
import type { Attempt, Job } from "../kernel/types.ts";
import { assetPath } from "./assets.ts";
import type { ConsoleRouter, Ctx } from "./common.ts";
import { formReason, pathTo, readForm } from "./common.ts";
import { errorPage } from "./error_page.tsx";
import { capital, isoUtc, JOB_ACTIONS, shown, StateBadge } from "./jobs.tsx";
import { Fragment, h } from "./jsx.ts";

/** How many trailing lines of an attempt's output the page shows (as `jobs show`). */
export const OUTPUT_TAIL_LINES = 20;

/** Registers the Job page and its actions. */
export function registerJob(router: ConsoleRouter): void {
  router.page("GET", "/jobs/:id", async (c, p) => {
    const detail = await jobDetailInScope(router.store, idOf(c), p.tenant);
    if (!detail) return await noJob(c);
    const replay = await replayPreview(router, detail.job);
    const body = (
      <JobBody
        detail={detail}
        p={p}
        replay={replay}
        done={doneOf(new URL(c.req.url).searchParams)}
      />
    );
    return await router.render(c, p, { title: `Job ${detail.job.id}`, body });
  });
  for (const action of JOB_ACTIONS) {
    router.page("POST", `/jobs/:id/${action}`, async (c, p) => await act(router, c, p, action));
  }
  router.page("POST", "/jobs/:id/replay", async (c, p) => await replay(router, c, p));
}

/** The job id of the path, or -1 when it is not one (found as no job). */
function idOf(c: Ctx): number {
  const text = c.req.param("id") ?? "";
  return /^\d{1,15}$/.test(text) ? Number(text) : -1;
}

/** The same page for a job of another tenant as for one that does not exist. */
async function noJob(c: Ctx): Promise<Response> {
  return await errorPage(c, 404, "There is no such job.");
}

/** What a replay of `job` would run: live (the store's definitions) and as planned. */
interface ReplayPreview {
  /** Null when the job's schedule has no stored definition: a live replay is refused. */
  live: DefinitionChoice | null;
  asPlanned: DefinitionChoice;
}

async function liveSource(router: ConsoleRouter, job: Job): Promise<DefinitionSource | null> {
  const ids = job.scheduleId === null ? [] : [job.scheduleId];
  const live = await storedLiveSchedules(router.store, ids);
  if (job.scheduleId !== null && !live.schedules!.some((s) => s.id === job.scheduleId)) {
    return null;
  }
  return { live, asPlanned: false };
}

async function replayPreview(router: ConsoleRouter, job: Job): Promise<ReplayPreview> {
  const source = await liveSource(router, job);
  const live = source === null
    ? null
    : (await previewReplay(router.store, String(job.id), source))?.definition ?? null;
  const planned = await previewReplay(router.store, String(job.id), AS_PLANNED);
  return { live, asPlanned: planned!.definition };
}

function JobBody(props: {
  detail: JobDetail;
  p: Principal;
  replay: ReplayPreview;
  done: string | null;
}) {
  const { detail: { job, attempts, audit }, p, replay } = props;
  const actions = JOB_ACTIONS.filter((a) =>
    mayTake(p.roles, `job.${a}`) && planJobAction(a, [job]).act.length > 0
  );
  const mayReplay = mayTake(p.roles, "job.replay");
  const loose = job.errors.filter((e) =>
    !attempts.some((a) => a.attempt === e.attempt && a.finishedAt === e.at)
  );
  return (
    <>
      <script src={assetPath("jobs.js")} defer></script>
      {props.done === null ? "" : <p class="message" role="status" data-done>{props.done}</p>}
      <p>
        <a href="/jobs">All jobs</a>
      </p>
      {actions.length === 0 ? "" : (
        <section aria-labelledby="actions" class="job-actions">
          <h2 id="actions">Actions</h2>
          {actions.map((a) => <ActionForm key={a} job={job} action={a} />)}
        </section>
      )}
      <section aria-labelledby="fields">
        <h2 id="fields">Job</h2>
        <Fields job={job} />
      </section>
      <section aria-labelledby="args">
        <h2 id="args">Args</h2>
        <pre class="data" data-args>{shown(JSON.stringify(job.args, null, 2) ?? "null")}</pre>
        <h2>Meta</h2>
        <pre class="data" data-meta>{shown(JSON.stringify(job.meta, null, 2) ?? "null")}</pre>
      </section>
      <section aria-labelledby="attempts">
        <h2 id="attempts">Attempts ({attempts.length})</h2>
        {attempts.length === 0
          ? <p class="note">None yet.</p>
          : attempts.map((a) => <AttemptView key={a.attempt} a={a} />)}
        {loose.length === 0 ? "" : (
          <>
            <h3>Other errors</h3>
            {loose.map((e) => (
              <div key={`${e.attempt}-${e.at}`}>
                <p class="note">attempt {e.attempt} at {isoUtc(e.at)}</p>
                <pre class="data" data-error>{shown(redact(e.error))}</pre>
              </div>
            ))}
          </>
        )}
      </section>
      <section aria-labelledby="definition">
        <h2 id="definition">Definition</h2>
        <Definition job={job} replay={replay} />
        {mayReplay ? <ReplayForm job={job} live={replay.live !== null} /> : ""}
      </section>
      <section aria-labelledby="audit">
        <h2 id="audit">Audit ({audit.length})</h2>
        {audit.length === 0
          ? <p class="note">Nobody has acted on this job.</p>
          : (
            <div class="table-wrap">
              <table data-table="audit">
                <thead>
                  <tr>
                    <th scope="col">At (UTC)</th>
                    <th scope="col">Actor</th>
                    <th scope="col">Action</th>
                    <th scope="col">Reason</th>
                    <th scope="col">Details</th>
                  </tr>
                </thead>
                <tbody>
                  {audit.map((row) => (
                    <tr key={row.id}>
                      <td>{isoUtc(row.at)}</td>
                      <td data-actor>{shown(row.actor)}</td>
                      <td>{shown(row.action)}</td>
                      <td class="wrap">{row.reason === null ? "-" : shown(row.reason)}</td>
                      <td class="wrap">
                        <code>{shown(redact(JSON.stringify(row.details)))}</code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
      </section>
    </>
  );
}

function Fields(props: { job: Job }) {
  const { job } = props;
  const text = (value: string | null) => value === null ? "-" : shown(value);
  const rows: [string, unknown][] = [
    ["State", <StateBadge key="state" state={job.state} />],
    ["Queue", shown(job.queue)],
    ["Worker", shown(job.worker)],
    ["Tenant", text(job.tenant)],
    [
      "Tags",
      job.tags.length === 0 ? "-" : (
        <ul class="tags">
          {job.tags.map((t) => <li key={t} class="badge">{shown(t)}</li>)}
        </ul>
      ),
    ],
    ["Occurrence", text(job.occurrence)],
    ["Schedule", text(job.scheduleId)],
    ["Scheduled for", isoUtc(job.scheduledFor)],
    ["Attempt", `${job.attempt} of ${job.maxAttempts}`],
    ["Fence", String(job.fence)],
    ["Priority", String(job.priority)],
    ["Attempted by", text(job.attemptedBy)],
    ["Lease expires", isoUtc(job.leaseExpiresAt)],
    ["Inserted", isoUtc(job.insertedAt)],
    ["Scheduled at", isoUtc(job.scheduledAt)],
    ["Attempted at", isoUtc(job.attemptedAt)],
    ["Completed at", isoUtc(job.completedAt)],
    ["Cancelled at", isoUtc(job.cancelledAt)],
    ["Discarded at", isoUtc(job.discardedAt)],
    ["Unique key", text(job.uniqueKey)],
  ];
  return (
    <dl class="fields" data-fields>
      {rows.map(([name, value]) => (
        <div key={name}>
          <dt>{name}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

function AttemptView(props: { a: Attempt }) {
  const { a } = props;
  const output = a.output === null || a.output === "" ? null : tail(a.output);
  return (
    <article class="attempt" data-attempt={a.attempt}>
      <h3>
        #{a.attempt} {a.kind} on {a.node === null ? "-" : shown(a.node)}, fence {a.fence}:{" "}
        {a.outcome ?? "running"}
      </h3>
      <p class="note">
        started {isoUtc(a.startedAt)}, finished {isoUtc(a.finishedAt)}
        {a.definition === null ? "" : `; definition ${shortHash(a.definition)}`}
        {a.actor === null && a.reason === null
          ? ""
          : `; by ${a.actor === null ? "-" : shown(a.actor)}${
            a.reason === null ? "" : `: ${shown(a.reason)}`
          }`}
      </p>
      {a.error === null ? "" : <pre class="data error" data-error>{shown(redact(a.error))}</pre>}
      {output === null ? "" : (
        <>
          <p class="note">
            output{output.cut > 0 ? ` (last ${output.lines.length} of ${output.all} lines)` : ""}
          </p>
          <pre class="data" data-output>{output.lines.map((l) => shown(redact(l))).join("\n")}</pre>
        </>
      )}
    </article>
  );
}

function tail(output: string): { lines: string[]; all: number; cut: number } {
  const all = output.replace(/\n$/, "").split("\n");
  const lines = all.slice(-OUTPUT_TAIL_LINES);
  return { lines, all: all.length, cut: all.length - lines.length };
}

function Definition(props: { job: Job; replay: ReplayPreview }) {
  const { job, replay } = props;
  const planned = runSettingsOf(job.meta).definition ?? null;
  return (
    <>
      <p>
        {job.scheduleId === null
          ? "Not a schedule's occurrence: it runs the args it was enqueued with."
          : `Planned with definition ${shortHash(planned)} of schedule ${shown(job.scheduleId)}.`}
      </p>
      <dl class="fields" data-replay-preview>
        <div>
          <dt>A replay, live</dt>
          <dd data-live>
            {replay.live === null
              ? "unavailable: the schedule has no definition in the store (a daemon syncs it " +
                "from the schedules file); replay it as planned"
              : shown(definitionText(replay.live))}
          </dd>
        </div>
        <div>
          <dt>A replay, as planned</dt>
          <dd data-as-planned>{shown(definitionText(replay.asPlanned))}</dd>
        </div>
      </dl>
      {replay.live === null || replay.live.differences.length === 0 ? "" : (
        <>
          <p>What differs (planned -&gt; live):</p>
          <ul class="differences" data-differences>
            {replay.live.differences.map((d) => (
              <li key={d}>
                <code>{shown(d)}</code>
              </li>
            ))}
          </ul>
        </>
      )}
    </>
  );
}

function ActionForm(props: { job: Job; action: JobAction }) {
  const { job, action } = props;
  const id = `reason-${action}`;
  return (
    <details class="action" data-action={action} id={action === "retry" ? "retry" : undefined}>
      <summary>{capital(action)}…</summary>
      <form method="post" action={pathTo("/jobs", job.id, action)}>
        <label for={id}>Reason</label>
        <input id={id} name="reason" required maxlength={1000} placeholder="why, for the audit" />
        <button type="submit" class={action === "retry" ? "primary" : "danger"}>
          {capital(action)} job {job.id}
        </button>
      </form>
    </details>
  );
}

function ReplayForm(props: { job: Job; live: boolean }) {
  const { job } = props;
  return (
    <details class="action" data-action="replay">
      <summary>Replay…</summary>
      <form method="post" action={pathTo("/jobs", job.id, "replay")}>
        <fieldset>
          <legend>Definition</legend>
          <label>
            <input
              type="radio"
              name="definition"
              value="live"
              checked={props.live}
              disabled={!props.live}
            />{" "}
            live (the store's)
          </label>
          <label>
            <input type="radio" name="definition" value="as-planned" checked={!props.live} />{" "}
            as planned
          </label>
        </fieldset>
        {job.state === "executing"
          ? (
            <label>
              <input type="checkbox" name="force" value="1" /> break the running lease (force)
            </label>
          )
          : ""}
        <label for="reason-replay">Reason</label>
        <input
          id="reason-replay"
          name="reason"
          required
          maxlength={1000}
          placeholder="why, for the audit"
        />
        <button type="submit">Replay job {job.id}</button>
      </form>
    </details>
  );
}

/** The form's reason, or the 400 page saying why it is not one. */
async function reasonOf(c: Ctx): Promise<{ form: URLSearchParams; reason: string } | Response> {
  const form = await readForm(c);
  if (form === null) return await errorPage(c, 400, "The request is not a form this page sent.");
  const read = formReason(form, true);
  if ("refused" in read) return await errorPage(c, 400, read.refused);
  return { form, reason: read.reason! };
}

async function act(
  router: ConsoleRouter,
  c: Ctx,
  p: Principal,
  action: JobAction,
): Promise<Response> {
  const read = await reasonOf(c);
  if (read instanceof Response) return read;
  const job = await jobInScope(router.store, idOf(c), p.tenant);
  if (!job) return await noJob(c);
  const { changed, skipped } = await applyJobAction(
    router.store,
    action,
    [job],
    router.who(p, read.reason),
  );
  if (changed.length === 0) {
    const why = skipped[0]?.why ?? "cannot be changed";
    return await refused(router, c, p, `Job ${job.id} ${why}: nothing to ${action}.`);
  }
  return c.redirect(`${pathTo("/jobs", job.id)}?done=${action}`, 303);
}

async function replay(router: ConsoleRouter, c: Ctx, p: Principal): Promise<Response> {
  const read = await reasonOf(c);
  if (read instanceof Response) return read;
  const job = await jobInScope(router.store, idOf(c), p.tenant);
  if (!job) return await noJob(c);
  const definition = read.form.get("definition") ?? "live";
  if (definition !== "live" && definition !== "as-planned") {
    return await errorPage(c, 400, `"definition" must be live or as-planned.`);
  }
  const source = definition === "as-planned" ? AS_PLANNED : await liveSource(router, job);
  if (source === null) {
    return await refused(
      router,
      c,
      p,
      `Job ${job.id}'s schedule has no definition in the store; replay it as planned.`,
    );
  }
  const force = read.form.get("force") === "1";
  const who = { ...router.who(p, read.reason), reason: read.reason };
  const result = await replayJob(router.store, String(job.id), who, force, source);
  if (!result.replayed) {
    return await refused(
      router,
      c,
      p,
      `Job ${job.id} is executing; nothing changed. Tick "force" to break its lease and replay it.`,
    );
  }
  return c.redirect(`${pathTo("/jobs", job.id)}?done=replay`, 303);
}

/** A 409 page saying why nothing changed, with the way back to the job. */
async function refused(
  router: ConsoleRouter,
  c: Ctx,
  p: Principal,
  message: string,
): Promise<Response> {
  return await router.render(c, p, {
    title: "Nothing changed",
    status: 409,
    body: (
      <>
        <p class="message error" role="alert">{message}</p>
        <p>
          <a href={pathTo("/jobs", idOf(c))}>Back to the job</a>
        </p>
      </>
    ),
  });
}

/** What an action did, from the redirect's `done` (a known action only). */
function doneOf(params: URLSearchParams): string | null {
  switch (params.get("done")) {
    case "retry":
      return "Retried: the job is available again.";
    case "cancel":
      return "Cancelled.";
    case "discard":
      return "Discarded.";
    case "replay":
      return "Replayed: a new attempt of the job is available.";
    default:
      return null;
  }
}
