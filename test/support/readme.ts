/**
 * Test support for running the worked examples of the README and of the
 * guides in `docs/` as a person copies them: the commands of each worked
 * example's `sh` and `console` blocks, in order, with the output the page
 * prints under each `$` command, and a matcher that reads that output the
 * way a person compares it.
 *
 * A worked example is a section of a page whose heading is one of
 * {@linkcode WORKED_EXAMPLE}: the README's opening (`# jobs`) and install,
 * and every `## The worked example...` of a guide (at any heading level).
 * A section ends at the next heading.
 * In an `sh` block every line but comments is a command; in a `console`
 * block a line starting with `$ ` is one (continued on the next line while
 * it ends with `\`), and the lines after it are its output. A block whose
 * first line is `#!` is a script's text, not commands.
 */

/** One command to type, and what the page says it prints on stdout. */
export interface Step {
  /** The command as a person pastes it (continuation lines included). */
  command: string;
  /** The printed output lines; empty when the page prints none. */
  expected: string[];
  /** The line of its page the command is on (1-based), for messages. */
  line: number;
}

/** One worked example: its heading and its commands, in order. */
export interface Example {
  title: string;
  steps: Step[];
}

/** The headings of the worked examples. */
export const WORKED_EXAMPLE = /^(jobs|Installing the `jobs` command|The worked example\b.*)$/;

/** The worked examples of `markdown`, in the order the page gives them. */
export function workedExamples(markdown: string): Example[] {
  const examples: Example[] = [];
  let current: Example | null = null;
  let block: { kind: string; first: number; lines: string[] } | null = null;
  for (const [index, line] of markdown.split("\n").entries()) {
    if (block) {
      if (/^```\s*$/.test(line)) {
        if (current) current.steps.push(...stepsOf(block.kind, block.lines, block.first));
        block = null;
      } else block.lines.push(line);
      continue;
    }
    const fence = /^```(\S*)/.exec(line);
    if (fence) {
      block = { kind: fence[1]!, first: index + 2, lines: [] };
      continue;
    }
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (heading) {
      current = WORKED_EXAMPLE.test(heading[1]!) ? { title: heading[1]!, steps: [] } : null;
      if (current) examples.push(current);
    }
  }
  return examples;
}

/** A worked example and the page it is on. */
export interface PageExample extends Example {
  /** The page, relative to the checkout: `README.md`, `docs/workflows.md`. */
  file: string;
}

/**
 * The pages whose worked examples are run, relative to `checkout`: the
 * README, then every Markdown page of `docs/` in name order.
 */
export async function examplePages(checkout: string): Promise<string[]> {
  const guides: string[] = [];
  for await (const entry of Deno.readDir(`${checkout}/docs`)) {
    if (entry.isFile && entry.name.endsWith(".md")) guides.push(`docs/${entry.name}`);
  }
  return ["README.md", ...guides.sort()];
}

/** The worked examples of every page of {@linkcode examplePages}, page by page. */
export async function pageExamples(checkout: string): Promise<PageExample[]> {
  const found: PageExample[] = [];
  for (const file of await examplePages(checkout)) {
    const markdown = await Deno.readTextFile(`${checkout}/${file}`);
    found.push(...workedExamples(markdown).map((example) => ({ ...example, file })));
  }
  return found;
}

/** The steps of one fenced block of kind `kind` whose first line is the page's line `first`. */
function stepsOf(kind: string, lines: string[], first: number): Step[] {
  if (lines[0]?.startsWith("#!")) return [];
  const steps: Step[] = [];
  if (kind === "sh") {
    for (const [i, line] of lines.entries()) {
      if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
      steps.push({ command: line, expected: [], line: first + i });
    }
    return steps;
  }
  if (kind !== "console") return steps;
  let continued = false;
  for (const [i, line] of lines.entries()) {
    const last = steps.at(-1);
    if (continued && last) {
      last.command += `\n${line}`;
    } else if (line.startsWith("$ ")) {
      steps.push({ command: line.slice(2), expected: [], line: first + i });
    } else if (last) {
      last.expected.push(line);
    }
    continued = /\\$/.test(line) && (steps.at(-1)?.expected.length ?? 1) === 0;
  }
  return steps;
}

/**
 * What varies from run to run, and stands for anything of its kind in a
 * page's printed output: `...` (left out), an ISO instant, an age such as
 * `(now)` or `(3m9s ago)`.
 */
const VARYING: Array<[RegExp, string]> = [
  [/\.\.\./, ".*"],
  [/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/, "\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z"],
  [/\((?:now|(?:\d+[dhms])+ ago)\)/, "\\((?:now|(?:\\d+[dhms])+ ago)\\)"],
];

/** A line with its end-of-line `\r` gone and every run of spaces one space (table columns). */
function normal(line: string): string {
  return line.replace(/\r$/, "").trim().replace(/\s+/g, " ");
}

/** The printed line `line` as a pattern: literal but for the {@linkcode VARYING} parts. */
export function linePattern(line: string): RegExp {
  const any = new RegExp(VARYING.map(([re]) => `(${re.source})`).join("|"), "g");
  let source = "";
  let at = 0;
  const text = normal(line);
  for (const match of text.matchAll(any)) {
    source += escape(text.slice(at, match.index));
    const kind = match.slice(1).findIndex((group) => group !== undefined);
    source += VARYING[kind]![1];
    at = match.index + match[0].length;
  }
  return new RegExp(`^${source}${escape(text.slice(at))}$`);
}

/**
 * Whether `actual` prints what `expected` shows: each printed line matches
 * a line of `actual`, in order (lines in between are allowed).
 */
export function printsAsShown(expected: readonly string[], actual: string): boolean {
  const lines = actual.split("\n").map(normal);
  let at = 0;
  for (const line of expected) {
    const pattern = linePattern(line);
    while (at < lines.length && !pattern.test(lines[at]!)) at++;
    if (at === lines.length) return false;
    at++;
  }
  return true;
}

/**
 * The code spans of `markdown` (outside fenced and indented blocks) that
 * run over a line break, each as `line: text`: a span a formatter wrapped
 * cannot be copied whole.
 */
export function wrappedCodeSpans(markdown: string): string[] {
  const lines = markdown.split("\n");
  let fenced = false;
  const prose = lines.map((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return "";
    }
    return fenced || /^ {4}/.test(line) ? "" : line;
  }).join("\n");
  const found: string[] = [];
  for (const match of prose.matchAll(/(?<!`)`([^`]+)`(?!`)/g)) {
    if (!match[1]!.includes("\n")) continue;
    const line = prose.slice(0, match.index).split("\n").length;
    found.push(`${line}: ${match[0]}`);
  }
  return found;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
