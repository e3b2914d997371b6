import { spawnSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { beforeAll, describe, expect, it } from 'vitest'
import { ensureBuilt } from '../test/__fixtures__/build.js'

const dist = join(import.meta.dirname, '..', 'dist')

beforeAll(() => ensureBuilt(), 120_000)

describe('entry points', () => {
  it('the root entry imports neither the native driver, kysely, nor vitest', async () => {
    const code = await readFile(join(dist, 'index.js'), 'utf8')
    for (const forbidden of ['better-sqlite3', 'kysely', 'vitest'])
      expect(code).not.toMatch(new RegExp(`from ['"]${forbidden}['"]`))
  })

  it('the sqlite entry takes a Kysely handle and never loads better-sqlite3 itself', async () => {
    const code = await readFile(join(dist, 'sqlite.js'), 'utf8')
    expect(code).not.toMatch(/from ['"]better-sqlite3['"]/)
  })

  it('has named exports only', async () => {
    for (const entry of ['index.js', 'sqlite.js', 'testing.js', 'testing-vitest.js']) {
      expect(await readFile(join(dist, entry), 'utf8')).not.toMatch(/export default/)
    }
  })

  it('/testing loads and works in a plain node process that cannot import vitest; /testing/vitest is where vitest is', () => {
    const entry = (name: string) => pathToFileURL(join(dist, name)).href
    const script = `
      import { ChildProcessShellRunner, MemoryWorkflowStore, RecordingAgentRunner, RecordingChannelSender, createTestRun } from ${JSON.stringify(entry('testing.js'))}
      const signal = new AbortController().signal
      const store = new MemoryWorkflowStore()
      const run = createTestRun()
      await store.insertRun(run)
      const agent = await new RecordingAgentRunner().run({ prompt: 'p', sessionKey: 's', workflowName: 'w', runId: 'r', stepId: 'a' }, { signal })
      const sender = new RecordingChannelSender()
      await sender.send('telegram:1', 'hi', { signal })
      const shell = await new ChildProcessShellRunner().run({ command: 'echo ok', timeoutMs: 5000, workflowName: 'w', runId: 'r', stepId: 'b' }, { signal })
      console.log(JSON.stringify({ steps: (await store.listSteps(run.id)).length, agent: agent.text, sent: sender.messages.length, shell: shell.stdout.trim() }))
    `
    // A resolve hook that refuses any vitest module, as a host without vitest installed would.
    const hooks = `export async function resolve(specifier, context, next) {
      if (/^(vitest|@vitest\\/)/.test(specifier)) throw new Error('imported ' + specifier)
      return next(specifier, context)
    }`
    const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)})`
    const node = (code: string) =>
      spawnSync(
        process.execPath,
        [
          '--import',
          `data:text/javascript,${encodeURIComponent(register)}`,
          '--input-type=module',
          '-e',
          code,
        ],
        { encoding: 'utf8', timeout: 30_000 },
      )
    const plain = node(script)
    expect(plain.stderr).toBe('')
    expect(JSON.parse(plain.stdout)).toEqual({ steps: 3, agent: 'result of a', sent: 1, shell: 'ok' })
    // The same hook does refuse the contract suite, so the check above is not vacuous.
    const contract = node(`await import(${JSON.stringify(entry('testing-vitest.js'))})`)
    expect(contract.status).not.toBe(0)
    expect(contract.stderr).toContain('imported vitest')
  })
})
