/**
 * What an idle `lango serve` loads. Every command it runs is forked from the server process, and a
 * fork costs what that process maps (ADR 0014): the AI SDK, the channel clients and the MCP server
 * are loaded only when configured or first used. Checked on a real server with an ESM resolve hook
 * (test/fixtures/module-probe.mjs).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { startLangoServe } from './fixtures/lango-serve.js'

const PROBE = fileURLToPath(new URL('./fixtures/module-probe.mjs', import.meta.url))

/** The npm packages a real `lango serve` resolved from start to ready, with `env`. */
async function packagesLoadedBy(env: Record<string, string>): Promise<string[]> {
  const home = await mkdtemp(join(tmpdir(), 'lango-lazy-'))
  const log = join(home, 'modules.log')
  await writeFile(log, '')
  const { child } = await startLangoServe(home, {
    NODE_OPTIONS: `--import=${PROBE}`,
    LANGO_MODULE_PROBE_LOG: log,
    LANGO_MODULE_PROBE_MATCH: '/node_modules/',
    ...env,
  })
  try {
    child.kill('SIGTERM')
    await new Promise((resolve) => child.once('exit', resolve))
    const lines = (await readFile(log, 'utf8')).split('\n').filter((line) => line !== '')
    const names = lines.map((line) => {
      const path = line.split(' from ')[0] ?? line
      const after = path.slice(path.lastIndexOf('/node_modules/') + '/node_modules/'.length)
      const parts = after.split('/')
      return after.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? after)
    })
    return [...new Set(names)].sort()
  } finally {
    await rm(home, { recursive: true, force: true })
  }
}

/** Loaded only when a model, a channel, traces or `/mcp` asks for them. */
const ON_DEMAND = [
  'ai',
  '@ai-sdk/openai-compatible',
  'grammy',
  '@slack/web-api',
  '@discordjs/rest',
  '@modelcontextprotocol/server',
  '@opentelemetry/sdk-trace',
]

describe('an idle server loads what it uses', () => {
  it('without a model, channels, traces or an MCP client: none of the on-demand packages', async () => {
    const loaded = await packagesLoadedBy({})
    expect(loaded).toEqual(expect.arrayContaining(['kysely', 'hono'])) // the probe sees packages
    expect(loaded.filter((name) => ON_DEMAND.includes(name))).toEqual([])
  })

  it('with a model: the AI SDK (the control)', async () => {
    const loaded = await packagesLoadedBy({
      LANGO_MODEL_BASE_URL: 'http://127.0.0.1:9/v1',
      LANGO_MODEL: 'test-model',
    })
    expect(loaded).toEqual(expect.arrayContaining(['ai', '@ai-sdk/openai-compatible']))
    expect(
      loaded.filter(
        (name) => ON_DEMAND.includes(name) && !['ai', '@ai-sdk/openai-compatible'].includes(name),
      ),
    ).toEqual([])
  })
})
