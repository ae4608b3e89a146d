/**
 * The help texts of the `jobs` command.
 *
 * @module
 */

/** `jobs --help`. */
export const MAIN_USAGE = `jobs: a durable job queue on an embedded SQLite file

Usage:
  jobs demo [--db PATH]   enqueue and work example jobs on PATH, print what happened
  jobs version            print the version
  jobs --help             print this help

Run "jobs <command> --help" for a command's options.`;

/** `jobs demo --help`. */
export const DEMO_USAGE = `Usage: jobs demo [--db PATH]

Enqueues jobs that complete, retry, snooze, run later, are refused as
duplicates, are cancelled or discarded, and one enqueued in the same
transaction as a row of the caller's own; runs them; prints each job's end.
Running it again on the same file adds a new run beside the earlier ones.

Options:
  --db PATH    the SQLite file (created when missing)  [default: ./jobs.db]
  -h, --help   print this help`;
