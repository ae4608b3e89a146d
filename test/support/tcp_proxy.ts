/**
 * A tiny TCP proxy for outage tests: it listens on a port of its own on
 * 127.0.0.1 and forwards every connection to the shared PostgreSQL server
 * (127.0.0.1:5432 unless told otherwise). A store or daemon pointed at the
 * proxy's port sees the database go away ({@linkcode TcpProxy.down}: the
 * listener and every forwarded connection closed, new connections refused)
 * and come back ({@linkcode TcpProxy.up}: listening again on the same port)
 * without anyone touching the server that other tests use. It can also hang
 * ({@linkcode TcpProxy.stall}: connections stay open and new ones are
 * accepted, but no byte goes either way until {@linkcode TcpProxy.resume}),
 * as a server that stopped answering or a network that drops every packet.
 *
 * @module
 */

/** Where the proxy forwards to. */
export interface ProxyTarget {
  /** @default "127.0.0.1" */
  hostname?: string;
  /** @default 5432 */
  port?: number;
}

/** A running proxy; see the module's documentation. */
export interface TcpProxy {
  /** The port it listens on (the same after every `up()`). */
  readonly port: number;
  /** Whether it accepts connections now. */
  readonly isUp: boolean;
  /** Connections accepted since start, for assertions that something connected. */
  readonly accepted: number;
  /** Forwarded connections open now. */
  readonly open: number;
  /** `url` (a `postgres://` URL) with its host and port replaced by the proxy's. */
  url(url: string): string;
  /** Stops listening and closes every forwarded connection, both sides (ending a stall). */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): void;
  /**
   * Forwards nothing either way from now on, closing nothing: every
   * connection, old or new, hangs (what arrives is held) until `resume()`.
   */
  stall(): void;
  /** Forwards again, the held bytes first. */
  resume(): void;
  /**
   * When set, a connection whose client sends bytes this returns true for
   * is cut (both sides closed) before they reach the server: a session
   * killed at one exact statement.
   */
  cutWhen: ((sent: string) => boolean) | null;
  /** Down for good. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

interface Pair {
  client: Deno.TcpConn;
  server: Deno.TcpConn | null;
  done: Promise<void>;
}

/** Starts a proxy on 127.0.0.1 and a free port, forwarding to `target`. */
export function startTcpProxy(target: ProxyTarget = {}): TcpProxy {
  const hostname = target.hostname ?? "127.0.0.1";
  const targetPort = target.port ?? 5432;
  let listener: Deno.TcpListener | null = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  const pairs = new Set<Pair>();
  let accepting: Promise<void> = accept(listener);
  let accepted = 0;
  const decoder = new TextDecoder();
  // Read only once connections come, after `proxy` below is made.
  const cut = (chunk: Uint8Array) => proxy.cutWhen?.(decoder.decode(chunk)) ?? false;
  /** While stalled, what every pipe awaits before it writes; null while forwarding. */
  let stalled: { promise: Promise<void>; resolve: () => void } | null = null;
  const flowing = () => stalled?.promise;

  async function accept(on: Deno.TcpListener): Promise<void> {
    for (;;) {
      let client: Deno.TcpConn;
      try {
        client = await on.accept();
      } catch {
        return; // closed by down()
      }
      accepted++;
      const pair: Pair = { client, server: null, done: Promise.resolve() };
      pair.done = forward(pair).finally(() => pairs.delete(pair));
      pairs.add(pair);
    }
  }

  async function forward(pair: Pair): Promise<void> {
    try {
      pair.server = await Deno.connect({ hostname, port: targetPort });
    } catch {
      closeQuietly(pair.client);
      return;
    }
    const server = pair.server;
    // Whichever side ends first ends both: a half-open session is no use to PostgreSQL.
    await Promise.race([
      pipe(pair.client, server, cut, flowing),
      pipe(server, pair.client, () => false, flowing),
    ]);
    closeQuietly(pair.client);
    closeQuietly(server);
  }

  async function down(): Promise<void> {
    // A stalled pipe waits at its gate, not in a read the close would end.
    proxy.resume();
    const closing = listener;
    listener = null;
    if (closing) {
      closeQuietly(closing);
      await accepting;
    }
    for (const pair of [...pairs]) {
      closeQuietly(pair.client);
      if (pair.server) closeQuietly(pair.server);
    }
    await Promise.all([...pairs].map((p) => p.done));
  }

  const proxy: TcpProxy = {
    port,
    cutWhen: null,
    get isUp() {
      return listener !== null;
    },
    get accepted() {
      return accepted;
    },
    get open() {
      return pairs.size;
    },
    url(url: string): string {
      const parsed = new URL(url);
      parsed.hostname = "127.0.0.1";
      parsed.port = String(port);
      return parsed.toString();
    },
    down,
    up(): void {
      if (listener) return;
      listener = Deno.listen({ hostname: "127.0.0.1", port });
      accepting = accept(listener);
    },
    stall(): void {
      stalled ??= Promise.withResolvers<void>();
    },
    resume(): void {
      stalled?.resolve();
      stalled = null;
    },
    close: down,
    [Symbol.asyncDispose]: down,
  };
  return proxy;
}

/**
 * Copies `from` to `to` until either ends or fails, or a chunk is one to
 * `cut` at; each chunk waits for `flowing` (a stall) before it is written.
 */
async function pipe(
  from: Deno.TcpConn,
  to: Deno.TcpConn,
  cut: (chunk: Uint8Array) => boolean,
  flowing: () => Promise<void> | undefined,
): Promise<void> {
  const buffer = new Uint8Array(64 * 1024);
  try {
    for (;;) {
      const n = await from.read(buffer);
      if (n === null || cut(buffer.subarray(0, n))) return;
      let gate;
      while ((gate = flowing())) await gate;
      let written = 0;
      while (written < n) written += await to.write(buffer.subarray(written, n));
    }
  } catch {
    // Closed by down() or by the other side.
  }
}

function closeQuietly(resource: { close(): void }): void {
  try {
    resource.close();
  } catch {
    // Already closed.
  }
}
