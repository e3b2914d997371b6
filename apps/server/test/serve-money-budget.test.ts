import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { CLI } from './fixtures/lango-serve.js'

// Probe finding (spend): a money budget over a model without a price counts $0 for ever, so it
// bounded nothing and nothing said so until a turn ran (and for daily budgets, not even then).
// `lango serve` now says it as it starts, naming the settings and the fix.

const homes: string[] = []
afterEach(async () => {
  for (const home of homes.splice(0)) await rm(home, { recursive: true, force: true })
})

/** Starts `lango serve` on a new home with `yaml`; resolves with what it logged up to listening, then stops it. */
async function startupLog(yaml: string): Promise<string> {
  if (!existsSync(CLI)) throw new Error('build @lango/server before running this test')
  const home = await mkdtemp(join(tmpdir(), 'lango-money-'))
  homes.push(home)
  await writeFile(join(home, 'lango.yaml'), yaml)
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0'], {
    env: { ...process.env, LANGO_HOME: home, LANGO_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let log = ''
  try {
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (chunk) => {
        log += chunk
        if (/^lango listening on /m.test(log)) resolve()
      })
      child.once('exit', (code) => reject(new Error(`lango serve exited ${code}: ${log}`)))
    })
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
  }
  return log
}

const MODEL = 'model:\n  base_url: http://127.0.0.1:9/v1\n  name: local-model\n'

describe('lango serve with a money budget', () => {
  it('warns at start when the model has no price, naming the settings and the fix', async () => {
    const log = await startupLog(
      `${MODEL}agent:\n  budget:\n    max_cost_per_day: 5\n    max_cost_per_creator_per_day: 1\n    max_tokens_per_day: 1000000\n`,
    )
    const line = log.split('\n').find((each) => each.includes('a money budget cannot bound the model'))
    expect(line, log).toBeDefined()
    expect(JSON.parse(line as string)).toMatchObject({
      model: 'local-model',
      settings: ['agent.budget.max_cost_per_day', 'agent.budget.max_cost_per_creator_per_day'],
      fix: expect.stringContaining('models.local-model.price'),
    })
  })

  it('says nothing when the model has a price', async () => {
    const log = await startupLog(
      `${MODEL}models:\n  local-model:\n    price: { input: 1, output: 2 }\nagent:\n  budget:\n    max_cost_per_day: 5\n`,
    )
    expect(log).not.toContain('a money budget cannot bound the model')
  })
})
