/**
 * The dashboard's shell: it holds the state, hands every key, clock tick,
 * resize and answer to {@linkcode reduce}, draws the state it returns, and
 * runs the effects (reads through a {@linkcode DashboardData}, actions
 * through {@linkcode DashboardActions}, quitting). Behaviour lives in the
 * reducer and drawing in {@linkcode DashboardView}; this file only connects
 * them to ink and to the injected clock, whose ticks (every `refreshMs`)
 * read the active screen again when the data says the store changed (or
 * cannot tell), and at least every `IDLE_REFRESH_MS` (reduce.ts).
 *
 * The state sits in a ref that each event replaces at once, and a render
 * follows: keys can arrive faster than renders, and `j` then `r` must
 * retry the job `j` moved to, not the one the last render showed.
 *
 * @module
 */

import { useApp, useInput, useWindowSize } from "ink";
import { type ReactNode, useEffect, useReducer, useRef } from "react";
import type { Clock } from "../clock.ts";
import { type DashboardActions, runAction } from "./actions.ts";
import { type DashboardData, readView } from "./data.ts";
import { type Key, splitChunk } from "./keys.ts";
import { reduce } from "./reduce.ts";
import { DashboardView } from "./screen.tsx";
import {
  type DashboardEvent,
  type DashboardState,
  type Effect,
  initialState,
  type Tab,
} from "./state.ts";
import { firstLine } from "./text.ts";

/** Props of {@linkcode App}. */
export interface AppProps {
  data: DashboardData;
  actions: DashboardActions;
  clock: Clock;
  /**
   * The command a person types to reach this program (`jobsctl`, or the
   * whole `deno run ... main.ts` line), in every hint the dashboard prints
   * to be pasted.
   */
  program: string;
  /** Refuse every action (`--read-only`). @default false */
  readOnly?: boolean;
  /** Paint colours; false under `NO_COLOR` or off a terminal. @default true */
  color?: boolean;
  /** How often the screen is read again, in ms of `clock`. @default 1000 */
  refreshMs?: number;
  /** The screen shown first. @default "overview" */
  initialTab?: Tab;
}

/** The dashboard. */
export function App(props: AppProps): ReactNode {
  const { data, actions, clock } = props;
  const refreshMs = props.refreshMs ?? 1000;
  const { exit } = useApp();
  const { columns, rows } = useWindowSize();
  const [, rendered] = useReducer((n: number) => n + 1, 0);
  const state = useRef<DashboardState | null>(null);
  state.current ??= initialState({
    program: props.program,
    location: data.location,
    readOnly: props.readOnly,
    tab: props.initialTab,
    columns,
    rows,
  });
  const mounted = useRef(true);

  // Each event replaces the state at once; its effects run after, and their
  // answers come back as events of their own.
  const dispatch = (event: DashboardEvent) => {
    if (!mounted.current) return;
    const before = state.current!;
    const step = reduce(before, event);
    state.current = step.state;
    // An event that changed nothing (a tick while the store is quiet) draws
    // nothing: a frame of the overview costs some 20 ms of CPU.
    if (step.state !== before) rendered();
    for (const effect of step.effects) run(effect);
  };
  const run = (effect: Effect) => {
    switch (effect.kind) {
      case "quit":
        return exit();
      case "read": {
        const at = clock.now();
        readView(data, effect.request, at).then(
          (result) => dispatch({ kind: "read", seq: effect.seq, at, result }),
          (error) => dispatch({ kind: "readFailed", seq: effect.seq, error: message(error) }),
        );
        return;
      }
      case "act":
        runAction(actions, effect.request).then(
          dispatch,
          (error) =>
            dispatch({ kind: "actFailed", request: effect.request, error: message(error) }),
        );
        return;
      case "bulkRead":
        data.jobs(effect.query).then(
          (jobs) => dispatch({ kind: "bulkRead", action: effect.action, jobs }),
          (error) =>
            dispatch({ kind: "bulkReadFailed", action: effect.action, error: message(error) }),
        );
        return;
      case "queues":
        data.queues().then(
          (names) => dispatch({ kind: "queues", names }),
          (error) => dispatch({ kind: "queuesFailed", error: message(error) }),
        );
        return;
    }
  };

  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);

  // The terminal's size is taken in the render that sees it, so no frame is
  // drawn at the old size; the first one also asks for the first read. Its
  // effects wait for the commit.
  const pending = useRef<Effect[]>([]);
  if (
    state.current.read.key === null || state.current.columns !== columns ||
    state.current.rows !== rows
  ) {
    const step = reduce(state.current, { kind: "resize", columns, rows });
    state.current = step.state;
    pending.current.push(...step.effects);
  }
  useEffect(() => {
    const effects = pending.current.splice(0);
    for (const effect of effects) run(effect);
  });

  useEffect(() => {
    const stop = new AbortController();
    // A change told while the same read was already running is owed to the
    // next tick: that read may have started before it.
    let owed = false;
    (async () => {
      while (!stop.signal.aborted) {
        await clock.sleep(refreshMs, stop.signal);
        if (stop.signal.aborted) return;
        const changed: boolean = (data.changed?.() ?? true) || owed;
        const seq = state.current!.read.seq;
        dispatch({ kind: "tick", changed, at: clock.now() });
        owed = changed && state.current!.read.seq === seq;
      }
    })();
    return () => stop.abort();
  }, [clock, refreshMs, data]);

  useInput((input, key) => {
    for (const one of splitChunk(input, { ...key, input } as Key)) {
      dispatch({ kind: "key", key: one });
    }
  });

  return (
    <DashboardView
      state={state.current}
      now={clock.now()}
      location={data.location}
      note={data.note}
      color={props.color}
    />
  );
}

function message(error: unknown): string {
  return firstLine(error instanceof Error ? error.message : String(error));
}
