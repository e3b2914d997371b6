import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './fixtures/http-server.js'
import { CLI, langoEnv } from './fixtures/mcp-stdio-client.js'

// Issue 24.6: the tools' output schemas as a client nobody here wrote sees them, the MCP Inspector's
// CLI (`@modelcontextprotocol/inspector-cli`, the line that runs on Node 20; the Inspector 2.x needs
// Node 22.19), over stdio (`lango mcp`) and Streamable HTTP (`/mcp`).

const run = promisify(execFile)
const require = createRequire(import.meta.url)
const INSPECTOR = join(
  require.resolve('@modelcontextprotocol/inspector-cli/package.json'),
  '..',
  'build',
  'cli.js',
)

// biome-ignore lint/suspicious/noExplicitAny: the Inspector's JSON is read loosely in assertions
type Json = Record<string, any>

let home: string
/**
 * Where the Inspector runs. Its 1.0.3 build looks for its own package.json with `existsSync` relative
 * to the working directory but imports it relative to its module, so it starts only where
 * `../package.json` exists; this directory has one.
 */
let cwd: string
let server: TestServer

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'lango-inspector-'))
  await writeFile(join(home, 'package.json'), '{"name":"inspector-cwd","private":true}\n')
  cwd = join(home, 'cwd')
  await mkdir(cwd)
  server = await startTestServer()
})
afterAll(async () => {
  await server?.dispose()
  await rm(home, { recursive: true, force: true })
})

/** Runs the Inspector's CLI mode with `args`; its stdout is the JSON answer. */
async function inspector(args: readonly string[]): Promise<Json> {
  const { stdout } = await run(process.execPath, [INSPECTOR, '--cli', ...args], {
    cwd,
    env: langoEnv(home),
    timeout: 120_000,
    maxBuffer: 16 * 1024 * 1024,
  })
  return JSON.parse(stdout.slice(stdout.indexOf('{'))) as Json
}

const overStdio = ['node', CLI, 'mcp']
const overHttp = () => [`${server.url}/mcp`, '--transport', 'http']

/** The tool's declared output fits what it returned: every required key there, no key it does not list. */
function expectFits(schema: Json, structured: Json): void {
  expect(schema.type).toBe('object')
  for (const key of schema.required ?? []) expect(structured).toHaveProperty(key)
  if (schema.additionalProperties === false)
    for (const key of Object.keys(structured)) expect(Object.keys(schema.properties)).toContain(key)
}

describe('the MCP Inspector CLI', () => {
  for (const [transport, target] of [
    ['stdio (lango mcp)', () => overStdio],
    ['Streamable HTTP (/mcp)', overHttp],
  ] as const) {
    it(`lists every tool with an output schema, and a call's structured result fits it, over ${transport}`, async () => {
      const listed = await inspector([...target(), '--method', 'tools/list'])
      const tools = listed.tools as Json[]
      expect(tools.length).toBeGreaterThan(20)
      for (const tool of tools) {
        expect(tool.outputSchema, tool.name).toMatchObject({ type: 'object' })
        expect(tool.inputSchema, tool.name).toMatchObject({ type: 'object' })
      }
      const byName = new Map(tools.map((tool) => [tool.name as string, tool]))

      const called = await inspector([...target(), '--method', 'tools/call', '--tool-name', 'cron_list'])
      expect(called.isError ?? false).toBe(false)
      expect(called.structuredContent).toMatchObject({ jobs: expect.any(Array), count: expect.any(Number) })
      expectFits(byName.get('cron_list')?.outputSchema, called.structuredContent)
      // The same result as text for clients that read only `content`.
      expect(JSON.parse(called.content[0].text)).toEqual(called.structuredContent)

      const history = await inspector([...target(), '--method', 'tools/call', '--tool-name', 'workflow_list'])
      expect(history.isError ?? false).toBe(false)
      expectFits(byName.get('workflow_list')?.outputSchema, history.structuredContent)
    })
  }
})
