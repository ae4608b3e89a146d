/**
 * The pipelines tab's keys: the list (move, open) and an open pipeline
 * (scroll, back).
 *
 * @module
 */

import type { Key } from "../keys.ts";
import { clamp, contentHeight, type DashboardState, selectedPipeline } from "../state.ts";

/** Keys of the pipelines list: move, open. */
export function pipelinesKey(
  state: DashboardState,
  key: Key,
  down: boolean,
  up: boolean,
): DashboardState {
  const count = state.pipelines?.length ?? 0;
  if (down) return { ...state, pipelineCursor: clamp(state.pipelineCursor + 1, count) };
  if (up) return { ...state, pipelineCursor: clamp(state.pipelineCursor - 1, count) };
  const pipeline = selectedPipeline(state);
  if (key.return && pipeline) {
    return { ...state, pipeline: { id: pipeline.id, data: null, scroll: 0 } };
  }
  return state;
}

/** Keys of an open pipeline: scroll, back. */
export function pipelineKey(
  state: DashboardState,
  key: Key,
  down: boolean,
  up: boolean,
): DashboardState {
  const pipeline = state.pipeline!;
  const page = contentHeight(state) - 1;
  const scroll = (to: number) => ({ ...state, pipeline: { ...pipeline, scroll: Math.max(0, to) } });
  if (down) return scroll(pipeline.scroll + 1);
  if (up) return scroll(pipeline.scroll - 1);
  if (key.pageDown || key.input === " ") return scroll(pipeline.scroll + page);
  if (key.pageUp) return scroll(pipeline.scroll - page);
  if (key.home || key.input === "g") return scroll(0);
  if (key.escape || key.backspace || key.leftArrow) return { ...state, pipeline: null };
  return state;
}
