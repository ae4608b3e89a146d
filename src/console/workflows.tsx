/** @jsxRuntime classic */
/** @jsx h */
/** @jsxFrag Fragment */
/**
 * The Workflows pages: `/workflows` lists runs with their state and step
 * counts (filtered by state and workflow, kept in the URL; keyset paged by
 * `?after=`), and `/workflows/{id}` shows one run as the tree of its steps
 * (each under the step it waits on last, as `jobs workflow show` draws
 * it) with state, attempts, result size and compensation, then the
 * compensation trail and the run's audit rows; with Retry (a failed run)
 * and Cancel (a run not final), each with a reason, for the roles that may.
 *
 * Stored text (names, keys, errors, reasons) is shown with its control
 * characters and bidi overrides made visible (`escapeControl`), so it can
 * reorder nothing on the page; the renderer escapes the rest.
 *
 * Reads and actions go through `src/admin/workflows.ts` in the principal's
 * scope, as `/api/v1/workflows` does: a tenant's person lists and acts on
 * its tenant's runs only (the tenant in the store's statement), and
 * another tenant's run is a 404 page as one that does not exist.
 *
 * @module
 */

import { mayTake } from "../admin/actions.ts";
import {
  cancelWorkflowRun,
  listWorkflowRuns,
  retryWorkflowRun,
  WorkflowActionRefused,
  type WorkflowRunView,
  workflowRunView,
  type WorkflowStepView,
} from "../admin/workflows.ts";
import type { Principal } from "../http/access.ts";
import { redact } from "../kernel/redact.ts";
import { escapeControl as visible } from "../text/escape.ts";
import { errorParts, errorSummary } from "../text/stored_error.ts";
import { FINAL_RUN_STATES, RUN_STATES, type RunState } from "../workflow/types.ts";
import { type ConsoleRouter, type Ctx, formReason, NAV_ORDER, pathTo, readForm } from "./common.ts";
import {
  doneMessage,
  isoUtc,
  pathId,
  queryId,
  QueryRefused,
  queryText,
  relative,
} from "./flow_helpers.ts";
import { Fragment, h } from "./jsx.ts";

/** Runs per page of the listing. */
export const RUNS_PER_PAGE = 50;

const DONE: Readonly<Record<string, string>> = {
  retry: "Retried: the run's failed steps run again.",
  cancel: "Cancelled: its waiting steps will not run.",
};

/** Registers the Workflows pages and their actions. */
export function registerWorkflows(router: ConsoleRouter): void {
  router.nav({ path: "/workflows", label: "Workflows", order: NAV_ORDER.workflows });

  router.page("GET", "/workflows", async (c, p) => {
    let filter;
    try {
      filter = runsFilter(c);
    } catch (error) {
      if (!(error instanceof QueryRefused)) throw error;
      return await router.render(c, p, {
        title: "Workflows",
        status: 400,
        body: <p class="message error" role="alert">{error.message}</p>,
      });
    }
    const runs = await listWorkflowRuns(router.store, {
      ...(filter.state === null ? {} : { state: filter.state }),
      ...(filter.workflow === null ? {} : { workflow: filter.workflow }),
      ...(filter.after === null ? {} : { after: filter.after }),
      ...(p.tenant === null ? {} : { tenant: p.tenant }),
      limit: RUNS_PER_PAGE + 1,
    });
    const page = runs.slice(0, RUNS_PER_PAGE);
    const next = runs.length > RUNS_PER_PAGE ? page.at(-1)!.id : null;
    const now = router.clock.now();
    const more = new URLSearchParams();
    if (filter.state) more.set("state", filter.state);
    if (filter.workflow) more.set("workflow", filter.workflow);
    if (next !== null) more.set("after", String(next));
    return await router.render(c, p, {
      title: "Workflows",
      body: (
        <>
          <form method="get" action="/workflows" class="filters" role="search">
            <label>
              State{" "}
              <select name="state">
                <option value="">any</option>
                {RUN_STATES.map((s) => (
                  <option key={s} value={s} selected={s === filter.state}>{s}</option>
                ))}
              </select>
            </label>
            <label>
              Workflow <input type="text" name="workflow" value={filter.workflow ?? ""} />
            </label>
            <button type="submit">Filter</button>
          </form>
          {page.length === 0
            ? <p class="note">No workflow run matches.</p>
            : (
              <div class="table-wrap">
                <table data-table="workflow-runs">
                  <thead>
                    <tr>
                      <th scope="col">Run</th>
                      <th scope="col">Workflow</th>
                      <th scope="col">State</th>
                      {p.tenant === null ? <th scope="col">Tenant</th> : null}
                      <th scope="col">Steps done</th>
                      <th scope="col">Started</th>
                      <th scope="col">Finished</th>
                      <th scope="col">Error</th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.map((run) => (
                      <tr key={run.id} data-run={run.id}>
                        <th scope="row">
                          <a href={pathTo("/workflows", run.id)}>{run.id}</a>
                        </th>
                        <td>{visible(run.workflow)}</td>
                        <td>
                          <StateBadge state={run.state} />
                        </td>
                        {p.tenant === null ? <td>{visible(run.tenant ?? "-")}</td> : null}
                        <td class="num">
                          {run.steps.completed}/{run.steps.total}
                          {run.steps.failed > 0 ? ` (${run.steps.failed} failed)` : ""}
                        </td>
                        <td title={isoUtc(run.startedAt)}>{relative(run.startedAt, now)}</td>
                        <td>{isoUtc(run.finishedAt)}</td>
                        <td class="clip">
                          {run.error === null ? "" : visible(firstLine(run.error))}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          {next === null ? null : (
            <p>
              <a href={`/workflows?${more}`} rel="next">Older runs</a>
            </p>
          )}
        </>
      ),
    });
  });

  router.page("GET", "/workflows/:id", async (c, p) => {
    const id = pathId(c, "id");
    const view = id === null ? null : await workflowRunView(router.store, id, p.tenant);
    if (view === null) return await noRun(router, c, p);
    return await runPage(router, c, p, view, doneMessage(c, DONE), null);
  });

  for (const action of ["retry", "cancel"] as const) {
    router.page("POST", `/workflows/:id/${action}`, async (c, p) => {
      const id = pathId(c, "id");
      const form = await readForm(c);
      const view = id === null ? null : await workflowRunView(router.store, id, p.tenant);
      if (view === null) return await noRun(router, c, p);
      const reason = formReason(form, true);
      if ("refused" in reason) return await runPage(router, c, p, view, null, reason.refused);
      const who = router.who(p, reason.reason);
      try {
        await (action === "retry" ? retryWorkflowRun : cancelWorkflowRun)(router.store, {
          id: view.run.id,
          reason: reason.reason!,
          actor: who.actor,
          now: who.now,
          tenant: p.tenant,
        });
      } catch (error) {
        if (!(error instanceof WorkflowActionRefused)) throw error;
        if (error.state === null) return await noRun(router, c, p);
        const again = await workflowRunView(router.store, view.run.id, p.tenant) ?? view;
        return await runPage(router, c, p, again, null, redact(error.message), 409);
      }
      return c.redirect(`${pathTo("/workflows", view.run.id)}?done=${action}`, 303);
    });
  }
}

interface RunsFilter {
  state: RunState | null;
  workflow: string | null;
  after: number | null;
}

function runsFilter(c: Ctx): RunsFilter {
  const state = queryText(c, "state");
  if (state !== null && !(RUN_STATES as readonly string[]).includes(state)) {
    throw new QueryRefused(`state must be one of ${RUN_STATES.join(", ")}`);
  }
  return {
    state: state as RunState | null,
    workflow: queryText(c, "workflow"),
    after: queryId(c, "after"),
  };
}

async function noRun(router: ConsoleRouter, c: Ctx, p: Principal): Promise<Response> {
  return await router.render(c, p, {
    title: "Not found",
    status: 404,
    body: (
      <>
        <p class="message error" role="alert">There is no such workflow run.</p>
        <p>
          <a href="/workflows">All workflow runs</a>
        </p>
      </>
    ),
  });
}

async function runPage(
  router: ConsoleRouter,
  c: Ctx,
  p: Principal,
  view: WorkflowRunView,
  done: string | null,
  refused: string | null,
  status: 200 | 400 | 409 = refused === null ? 200 : 400,
): Promise<Response> {
  const { run } = view;
  const now = router.clock.now();
  const trail = await router.store.auditList({ target: `workflow:${run.id}` });
  const retry = run.state === "failed" && mayTake(p.roles, "workflow.retry");
  const cancel = !FINAL_RUN_STATES.includes(run.state) && run.cancelReason === null &&
    mayTake(p.roles, "workflow.cancel");
  return await router.render(c, p, {
    title: `Workflow run ${run.id}`,
    status,
    body: (
      <>
        {done === null ? null : <p class="message" role="status">{done}</p>}
        {refused === null ? null : <p class="message error" role="alert">{refused}</p>}
        <dl class="facts" data-run={run.id}>
          <dt>Workflow</dt>
          <dd>{visible(run.workflow)}{view.saga ? " (saga)" : ""}</dd>
          <dt>State</dt>
          <dd data-state>
            <StateBadge state={run.state} />
          </dd>
          <dt>Started</dt>
          <dd>{isoUtc(run.startedAt)} ({relative(run.startedAt, now)})</dd>
          <dt>Finished</dt>
          <dd>{isoUtc(run.finishedAt)}</dd>
          {run.tenant === null ? null : (
            <>
              <dt>Tenant</dt>
              <dd>{visible(run.tenant)}</dd>
            </>
          )}
          {run.key === null ? null : (
            <>
              <dt>Key</dt>
              <dd>{visible(run.key)}</dd>
            </>
          )}
          {run.error === null ? null : (
            <>
              <dt>Error</dt>
              <dd>
                <pre class="error-text">{visible(errorSummary(run.error))}</pre>
              </dd>
            </>
          )}
          {run.cancelReason === null ? null : (
            <>
              <dt>Cancelled because</dt>
              <dd>{visible(run.cancelReason)}</dd>
            </>
          )}
          <dt>Definition</dt>
          <dd>
            <code>{view.hash.slice(0, 16)}</code>
          </dd>
        </dl>
        {retry || cancel
          ? (
            <div class="actions">
              {retry ? <ActionForm id={run.id} action="retry" label="Retry" /> : null}
              {cancel ? <ActionForm id={run.id} action="cancel" label="Cancel" /> : null}
            </div>
          )
          : null}
        <section aria-labelledby="steps">
          <h2 id="steps">Steps</h2>
          <StepTree view={view} now={now} />
        </section>
        {view.saga || view.compensations.length > 0
          ? (
            <section aria-labelledby="compensations">
              <h2 id="compensations">Compensations</h2>
              {view.compensations.length === 0
                ? <p class="note">None ran.</p>
                : (
                  <ol class="compensations" data-list="compensations">
                    {view.compensations.map((comp, i) => (
                      <li key={i}>
                        undo <strong>{visible(comp.step)}</strong>
                        {comp.useCase === null ? "" : ` with ${visible(comp.useCase)}`}{" "}
                        <StateBadge state={comp.state} />{" "}
                        {attempts(comp.attempts, comp.maxAttempts)}
                        {comp.jobId === null ? null : (
                          <>
                            {" "}
                            <a href={pathTo("/jobs", comp.jobId)}>job {comp.jobId}</a>
                          </>
                        )}
                        {comp.error === null ? null : <StoredError error={comp.error} />}
                      </li>
                    ))}
                  </ol>
                )}
            </section>
          )
          : null}
        <section aria-labelledby="input">
          <h2 id="input">Input</h2>
          <pre class="json">{JSON.stringify(run.input, null, 2)}</pre>
        </section>
        <section aria-labelledby="audit">
          <h2 id="audit">Audit</h2>
          {trail.length === 0
            ? <p class="note">No action on this run yet.</p>
            : (
              <div class="table-wrap">
                <table data-table="workflow-audit">
                  <thead>
                    <tr>
                      <th scope="col">At</th>
                      <th scope="col">Actor</th>
                      <th scope="col">Action</th>
                      <th scope="col">Reason</th>
                    </tr>
                  </thead>
                  <tbody>
                    {trail.map((row) => (
                      <tr key={row.id}>
                        <td>{isoUtc(row.at)}</td>
                        <td>{visible(row.actor)}</td>
                        <td>{row.action}</td>
                        <td class="clip">
                          {row.reason === null ? "" : visible(firstLine(row.reason))}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
        </section>
      </>
    ),
  });
}

function ActionForm(props: { id: number; action: "retry" | "cancel"; label: string }) {
  const field = `reason-${props.action}`;
  return (
    <form
      method="post"
      action={pathTo("/workflows", props.id, props.action)}
      class="action"
      data-action={props.action}
    >
      <label for={field}>Reason</label>
      <input id={field} type="text" name="reason" required maxlength={1000} />
      <button type="submit" class={props.action === "retry" ? "primary" : "danger"}>
        {props.label}
      </button>
    </form>
  );
}

/** The steps as nested lists: each under its dependency that comes last in the definition. */
function StepTree(props: { view: WorkflowRunView; now: number }) {
  const { steps } = props.view;
  const order = new Map(steps.map((s, i) => [s.id, i]));
  const parentOf = (s: WorkflowStepView) =>
    s.dependsOn.reduce<string | null>(
      (last, d) => (last === null || order.get(d)! > order.get(last)! ? d : last),
      null,
    );
  const children = new Map<string | null, WorkflowStepView[]>();
  for (const step of steps) {
    const parent = parentOf(step);
    children.set(parent, [...(children.get(parent) ?? []), step]);
  }
  const level = (parent: string | null): unknown => {
    const kids = children.get(parent) ?? [];
    if (kids.length === 0) return null;
    return (
      <ul class="tree" role={parent === null ? "tree" : "group"}>
        {kids.map((step) => (
          <li key={step.id} role="treeitem" data-step={step.id}>
            <StepLine step={step} parent={parent} now={props.now} />
            {level(step.id)}
          </li>
        ))}
      </ul>
    );
  };
  return <>{level(null)}</>;
}

function StepLine(props: { step: WorkflowStepView; parent: string | null; now: number }) {
  const { step } = props;
  const notes: string[] = [];
  const others = step.dependsOn.filter((d) => d !== props.parent);
  if (others.length > 0) notes.push(`after ${others.join(", ")}`);
  if (step.forEach !== null) notes.push(`for each of ${step.forEach}`);
  if (step.optional) notes.push("optional");
  if (step.useCase !== null && step.useCase !== step.id) notes.push(step.useCase);
  notes.push(`runs ${step.worker}`);
  if (step.compensation?.mode === "use-case") notes.push(`undo: ${step.compensation.useCase}`);
  else if (step.compensation?.mode === "none") {
    notes.push(`no undo: ${step.compensation.reason}`);
  }
  return (
    <div class="step">
      <strong class="step-id">{visible(step.id)}</strong> <StateBadge state={step.state} />
      {step.items === null ? "" : ` items ${step.items.done}/${step.items.total}`}{" "}
      <span class="note">
        {step.state === "cancelled" && step.attempts === 0
          ? "not run"
          : step.state === "waiting"
          ? ""
          : attempts(step.attempts, step.maxAttempts)}
        {step.nextAttemptAt === null
          ? ""
          : ` · next attempt ${relative(step.nextAttemptAt, props.now)}`}
        {step.resultBytes === null ? "" : ` · result ${step.resultBytes} B`}
      </span>
      {step.jobId === null ? null : (
        <>
          {" "}
          <a href={pathTo("/jobs", step.jobId)}>job {step.jobId}</a>
        </>
      )}
      <span class="note step-notes">({visible(notes.join("; "))})</span>
      {step.error === null ? null : <StoredError error={step.error} />}
    </div>
  );
}

/** How many lines of a command's stderr tail a step's error shows. */
const STDERR_LINES = 5;

/**
 * A stored error as a page shows it: its message's first line (never the
 * stack frames and source paths kept for `jobs job <id>`), then the last
 * lines of the stderr a command left.
 */
function StoredError(props: { error: string }) {
  const { message, stderr } = errorParts(props.error);
  const tail = stderr.filter((l) => l.trim() !== "").slice(-STDERR_LINES);
  return (
    <pre class="error-text">{visible([message, ...tail.map((l) => `stderr: ${l}`)].join("\n"))}</pre>
  );
}

/** A state as a badge: good when done, bad when failed, warn while undoing. */
export function StateBadge(props: { state: string }) {
  const tone = ["completed", "compensated"].includes(props.state)
    ? "good"
    : ["failed", "discarded"].includes(props.state)
    ? "bad"
    : ["compensating", "cancelled", "paged"].includes(props.state)
    ? "warn"
    : "";
  return <span class={`badge ${tone}`.trim()}>{props.state}</span>;
}

function attempts(made: number, max: number | null): string {
  return max === null ? `attempt ${made}` : `attempt ${made}/${max}`;
}

function firstLine(text: string): string {
  const line = text.split("\n", 1)[0]!;
  return line.length > 160 ? `${line.slice(0, 159)}…` : line;
}
