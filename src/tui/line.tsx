/**
 * One line of the dashboard as coloured segments. Every segment goes
 * through `clean` (see {@linkcode clip}) on its way to ink, whatever its source: no
 * control character from the store can reach the terminal, even one a view
 * forgot to clean. Colour is dropped when the dashboard runs without it
 * (`NO_COLOR`, not a terminal); the text alone must then carry the meaning.
 *
 * @module
 */

import { Text } from "ink";
import { createContext, type ReactNode, useContext } from "react";
import { clip, type Seg } from "./seg.ts";

export { clip, type Seg, seg } from "./seg.ts";

/** Whether the dashboard paints colours (false with `NO_COLOR` or off a terminal). */
export const ColorContext = createContext(true);

/** One line of at most `width` characters; never wraps. */
export function Line(props: { segs: Seg[]; width: number }): ReactNode {
  const color = useContext(ColorContext);
  const segs = clip(props.segs, props.width);
  return (
    <Text wrap="truncate">
      {segs.length === 0 ? " " : segs.map((s, i) => (
        <Text
          key={i}
          color={color ? s.color : undefined}
          bold={color && s.bold}
          dimColor={color && s.dim}
          inverse={color && s.inverse}
        >
          {s.text}
        </Text>
      ))}
    </Text>
  );
}

/** Lines, exactly `height` of them (cut or padded with empty lines). */
export function Lines(props: { lines: Seg[][]; width: number; height: number }): ReactNode {
  const lines = props.lines.slice(0, Math.max(0, props.height));
  while (lines.length < props.height) lines.push([]);
  return <>{lines.map((l, i) => <Line key={i} segs={l} width={props.width} />)}</>;
}
