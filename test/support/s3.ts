/**
 * A real S3-compatible server for tests: s3rver on 127.0.0.1 (a free
 * port), its objects in a folder of the test's, with empty buckets made at
 * its start. It checks request signatures, so a wrong secret is refused.
 */

import { join } from "node:path";
import S3rver from "@20minutes/s3rver";

/** What the tests use of s3rver (a CommonJS package with no types). */
interface S3rverServer {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
const S3rverClass = S3rver as unknown as new (options: Record<string, unknown>) => S3rverServer;

/** Starts s3rver keeping its objects under `dir`, with the empty `buckets`. */
export async function startS3(
  dir: string,
  buckets: string[],
): Promise<{ endpoint: string; close(): Promise<void> }> {
  const server = new S3rverClass({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory: join(dir, "s3"),
    configureBuckets: buckets.map((name) => ({ name })),
  });
  const { port } = await server.run();
  return { endpoint: `http://127.0.0.1:${port}`, close: () => server.close() };
}
