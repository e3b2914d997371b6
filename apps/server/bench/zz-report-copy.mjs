import { openSync } from 'node:fs'
// What the server's benches share: the verdict lines, the statistics they are computed from, and
// starting and stopping the processes they measure.

import { spawn } from 'node:child_process'
import { Agent, request } from 'node:http'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

/** The built CLI (`pnpm bench` builds first). */
export const CLI = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli.js')

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

/**
 * Starts `node <nodeArgs> <script> <args>` (in `cwd`, with `env` added) and resolves with the child, the URL it
 * prints on stderr (`… listening on <url>`) and `stderr()`, the last 20,000 characters it wrote
 * there; rejects with that text if it exits first.
 */
export function startProcess(script, args, env, { cwd, nodeArgs = [] } = {}) {
  const child = spawn(process.execPath, [...nodeArgs, script, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', openSync('/tmp/prof/trace/' + Math.random().toString(36).slice(2) + '.log', 'w'), 'pipe'],
  })
  return new Promise((resolve, reject) => {
    let text = ''
    child.stderr.on('data', (chunk) => {
      text = (text + chunk).slice(-20_000)
      const match = /listening on (http:\/\/\S+)/.exec(text)
      if (match !== null) resolve({ child, url: match[1], stderr: () => text })
    })
    child.once('exit', (code) => reject(new Error(`${script} exited ${code}: ${text.slice(-2000)}`)))
  })
}

/** Stops a child with `signal` (SIGTERM) and resolves once it has exited. */
export function stopProcess(child, signal = 'SIGTERM') {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill(signal)
  return exited
}

const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 })

/** One POST of `body` (JSON) over one keep-alive connection; resolves with the status and body. */
export function post(url, body) {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent: keepAlive, headers: { 'content-type': 'application/json' } },
      (res) => {
        const chunks = []
        res.on('data', (chunk) => chunks.push(chunk))
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

/** Median latency of `n` sequential calls, after `warmup` unmeasured ones. */
export async function latency(call, n, warmup) {
  for (let i = 0; i < warmup; i++) await call()
  const samples = []
  for (let i = 0; i < n; i++) {
    const started = performance.now()
    await call()
    samples.push(performance.now() - started)
  }
  return median(samples)
}

/** Closes the connection {@link post} keeps open. */
export function closePosts() {
  keepAlive.destroy()
}
