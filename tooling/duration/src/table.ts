import type { DurationProblem } from './index.js'

/** One row of {@link DURATION_TABLE}: a text and what every entry point must make of it. */
export type DurationCase =
  | { readonly input: string; readonly milliseconds: number }
  | { readonly input: string; readonly problem: DurationProblem }

/**
 * The table every entry point that takes a duration runs (ADR 0013): the cron tools and service,
 * `manage_cron_jobs`, the operator's cron route and CLI, workflow YAML timeouts and retry back-offs,
 * `lango.yaml`, and the dashboard's reading of intervals. An entry point with a range answers a
 * reading outside it with its range error; everything else must come out exactly as written here.
 */
export const DURATION_TABLE: readonly DurationCase[] = [
  { input: '90s', milliseconds: 90_000 },
  { input: '5m', milliseconds: 300_000 },
  { input: '10m', milliseconds: 600_000 },
  { input: '1h', milliseconds: 3_600_000 },
  { input: '1h30m', milliseconds: 5_400_000 },
  { input: '1.5h', milliseconds: 5_400_000 },
  { input: '30m1h', milliseconds: 5_400_000 },
  { input: '2m30s', milliseconds: 150_000 },
  { input: '2m 30s', milliseconds: 150_000 },
  { input: '90 s', milliseconds: 90_000 },
  { input: ' 15m ', milliseconds: 900_000 },
  { input: '10M', milliseconds: 600_000 },
  { input: '0.5m', milliseconds: 30_000 },
  { input: '1m30s500ms', milliseconds: 90_500 },
  { input: '120000ms', milliseconds: 120_000 },
  { input: '1m0.0005s', milliseconds: 60_001 },
  { input: '1m0.0004s', milliseconds: 60_000 },
  { input: '1d', milliseconds: 86_400_000 },
  { input: '1w', milliseconds: 604_800_000 },
  { input: '600', problem: 'unit-missing' },
  { input: '86400', problem: 'unit-missing' },
  { input: '1.5', problem: 'unit-missing' },
  { input: '10 minutes', problem: 'not-a-duration' },
  { input: '10min', problem: 'not-a-duration' },
  { input: '1h30', problem: 'not-a-duration' },
  { input: '-5m', problem: 'not-a-duration' },
  { input: '.5h', problem: 'not-a-duration' },
  { input: '1e3s', problem: 'not-a-duration' },
  { input: 'PT10M', problem: 'not-a-duration' },
  { input: '5 x', problem: 'not-a-duration' },
  { input: '99999999999999999999d', problem: 'too-large' },
  { input: '1s'.repeat(33), problem: 'too-long' },
]
