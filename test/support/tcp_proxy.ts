/**
 * A tiny TCP proxy for outage tests: it listens on a port of its own on
 * 127.0.0.1 and forwards every connection to the shared PostgreSQL server
 * (127.0.0.1:5432 unless told otherwise). A store or daemon pointed at the
 * proxy's port sees the database go away ({@linkcode TcpProxy.down}: the
 * listener and every forwarded connection closed, new connections refused)
 * and come back ({@linkcode TcpProxy.up}: listening again on the same port)
 * without anyone touching the server that other tests use.
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
  /** Stops listening and closes every forwarded connection, both sides. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): void;
  /**
   * When set, a connection whose client sends bytes this returns true for
   * is cut (both sides closed) before they reach the server: a session
   * killed at one exact statement.
   */
  cutWhen: ((sent: string) => boolean) | null;
  /**
   * A database that hangs: connections stay open (and new ones are
   * accepted) but no byte is forwarded either way until {@linkcode resume};
   * what was held back then goes through in order.
   */
  stall(): void;
  /** Forwards again what {@linkcode stall} held back, and all that follows. */
  resume(): void;
  /** Whether the proxy is stalled now. */
  readonly isStalled: boolean;
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
  let listener: Deno.TcpListener | null = listenBelowEphemeral();
  const port = listener.addr.port;
  const pairs = new Set<Pair>();
  let accepting: Promise<void> = accept(listener);
  let accepted = 0;
  const decoder = new TextDecoder();
  // Read only once connections come, after `proxy` below is made.
  const cut = (chunk: Uint8Array) => proxy.cutWhen?.(decoder.decode(chunk)) ?? false;
  /** While stalled: what a pipe awaits before it writes a chunk on. */
  let stalled: { until: Promise<void>; release: () => void } | null = null;
  const gate = () => stalled?.until;
  const resume = () => {
    stalled?.release();
    stalled = null;
  };

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
      pipe(pair.client, server, cut, gate),
      pipe(server, pair.client, () => false, gate),
    ]);
    closeQuietly(pair.client);
    closeQuietly(server);
  }

  async function down(): Promise<void> {
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
    // Held chunks find their connections closed: a stall ends with the proxy.
    resume();
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
    get isStalled() {
      return stalled !== null;
    },
    stall(): void {
      if (stalled) return;
      let release!: () => void;
      const until = new Promise<void>((resolve) => (release = resolve));
      stalled = { until, release };
    },
    resume,
    down,
    up(): void {
      if (listener) return;
      listener = Deno.listen({ hostname: "127.0.0.1", port });
      accepting = accept(listener);
    },
    close: down,
    [Symbol.asyncDispose]: down,
  };
  return proxy;
}

/**
 * Copies `from` to `to` until either ends or fails, or a chunk is one to `cut` at;
 * each chunk waits for what `gate` returns (a stall) before it is written on.
 */
async function pipe(
  from: Deno.TcpConn,
  to: Deno.TcpConn,
  cut: (chunk: Uint8Array) => boolean,
  gate: () => Promise<void> | undefined = () => undefined,
): Promise<void> {
  const buffer = new Uint8Array(64 * 1024);
  try {
    for (;;) {
      const n = await from.read(buffer);
      if (n === null || cut(buffer.subarray(0, n))) return;
      const held = gate();
      if (held) await held;
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

/**
 * A listener on a free port below the kernel's ephemeral range (32768 and
 * up on Linux): the proxy listens again on its port after `down()`, and a
 * port the kernel hands out for outgoing connections was taken by another
 * test's connection meanwhile (AddrInUse on a busy machine).
 */
function listenBelowEphemeral(): Deno.TcpListener {
  for (let tries = 0; tries < 200; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    try {
      return Deno.listen({ hostname: "127.0.0.1", port });
    } catch (error) {
      if (!(error instanceof Deno.errors.AddrInUse)) throw error;
    }
  }
  return Deno.listen({ hostname: "127.0.0.1", port: 0 });
}
