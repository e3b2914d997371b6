// What the server's benches share: the verdict lines and the statistics they are computed from.

const STRICT = process.env.BENCH_STRICT === '1'

/**
 * A reporter for one bench: `report(metric, detail, pass, { noisy })` prints
 * `<prefix>  <metric>  <detail>  PASS|FAIL|MISS …`; a miss fails the run unless it is noise-prone
 * and BENCH_STRICT is unset. `exit()` ends the process with 1 when something failed.
 */
export function reporter(prefix) {
  let failed = false
  return {
    report(metric, detail, pass, { noisy = false } = {}) {
      const verdict = pass ? 'PASS' : noisy && !STRICT ? 'MISS (noise-prone; BENCH_STRICT=1 fails)' : 'FAIL'
      if (!pass && (!noisy || STRICT)) failed = true
      console.log(`${prefix}  ${metric}  ${detail}  ${verdict}`)
    },
    exit() {
      process.exit(failed ? 1 : 0)
    },
  }
}

export const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

export const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
}
