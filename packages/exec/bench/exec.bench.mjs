// Exec benchmark: every figure is a ratio against a baseline measured in the same run.
// Run with `pnpm bench` at the root, or `node bench/exec.bench.mjs` here after `pnpm build`.
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { run } from '../dist/index.js'
import { nodePtyDriver, runWithPty } from '../dist/pty.js'

const require = createRequire(import.meta.url)
const pty = require('node-pty')
const { execa } = await import('execa')

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}
const report = (name, ours, baseline, unit, target, extra = '') => {
  const ratio = ours / baseline
  const pass = ratio <= target ? 'PASS' : 'FAIL'
  console.log(
    `exec  ${name.padEnd(34)} ours=${ours.toFixed(3)}${unit}  baseline=${baseline.toFixed(3)}${unit}  ratio=${ratio.toFixed(3)}  target<=${target}  ${pass}${extra}`,
  )
  return pass === 'PASS'
}

function rawSpawn() {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', 'true'], { stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout.on('data', () => {})
    child.stderr.on('data', () => {})
    child.once('error', reject)
    child.once('close', resolve)
  })
}

function rawPty() {
  return new Promise((resolve) => {
    const term = pty.spawn('/bin/sh', ['-c', 'true'], {
      cols: 120,
      rows: 30,
      env: { PATH: process.env.PATH },
    })
    term.onData(() => {})
    term.onExit(resolve)
  })
}

/** Alternates the two contenders so machine noise hits both alike; returns medians in ms. */
async function interleave(iterations, contenders) {
  const samples = contenders.map(() => [])
  for (let warm = 0; warm < 20; warm++) for (const contender of contenders) await contender()
  for (let index = 0; index < iterations; index++) {
    for (const [position, contender] of contenders.entries()) {
      const start = performance.now()
      await contender()
      samples[position].push(performance.now() - start)
    }
  }
  return samples.map(median)
}

let allPass = true
const iterations = Number(process.env.BENCH_ITERATIONS ?? 400)

{
  const [ours, raw, viaExeca] = await interleave(iterations, [
    () => run('true'),
    rawSpawn,
    () => execa('sh', ['-c', 'true'], { reject: false }),
  ])
  allPass = report("run('true') median latency", ours, raw, 'ms', 1.15) && allPass
  console.log(
    `exec  ${'(execa 9, for the record)'.padEnd(34)} execa=${viaExeca.toFixed(3)}ms  ratio=${(viaExeca / raw).toFixed(3)}`,
  )
}

{
  const driver = nodePtyDriver()
  const [ours, raw] = await interleave(Math.floor(iterations / 2), [
    () => runWithPty('true', { driver }),
    rawPty,
  ])
  allPass = report("runWithPty('true') median latency", ours, raw, 'ms', 1.15) && allPass
}

{
  // Capture 100 MB in a fresh process each, so peak RSS belongs to one contender alone.
  const worker = fileURLToPath(new URL('./capture-worker.mjs', import.meta.url))
  const measure = (mode) =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [worker, mode], { stdio: ['ignore', 'pipe', 'inherit'] })
      let text = ''
      child.stdout.on('data', (chunk) => {
        text += chunk
      })
      child.once('close', (code) =>
        code === 0 ? resolve(JSON.parse(text)) : reject(new Error(`${mode} failed`)),
      )
    })
  const ours = []
  const discard = []
  for (let round = 0; round < 5; round++) {
    ours.push(await measure('ours'))
    discard.push(await measure('discard'))
  }
  const oursMs = median(ours.map((sample) => sample.ms))
  const discardMs = median(discard.map((sample) => sample.ms))
  allPass = report('capture 100 MB: time', oursMs, discardMs, 'ms', 1.05) && allPass
  const oursRss = median(ours.map((sample) => sample.maxRssKiB)) / 1024
  const discardRss = median(discard.map((sample) => sample.maxRssKiB)) / 1024
  const bound = discardRss + 1 + 2
  const rssPass = oursRss <= bound
  allPass = rssPass && allPass
  console.log(
    `exec  ${'capture 100 MB: peak RSS'.padEnd(34)} ours=${oursRss.toFixed(1)}MiB  discarding reader=${discardRss.toFixed(1)}MiB  target<=${bound.toFixed(1)}MiB (reader + 1 MiB bound + 2 MiB)  ${rssPass ? 'PASS' : 'FAIL'}`,
  )
}

console.log(`exec  overall: ${allPass ? 'PASS' : 'FAIL'}`)
