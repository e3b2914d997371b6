import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { readdir, readFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { waitFor } from '@lango/vitest-config/wait-for'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { tempDir } from './__fixtures__/helpers.js'
import { ExecError, MemoryRefStore, ProcessRegistry, run } from './index.js'
import { nodePtyDriver, runWithPty } from './pty/index.js'

const TOKEN = 'ghp_cmdlineCanary7f3a9c2e41d0'
const hasCurl = (() => {
  try {
    execFileSync('curl', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()

let dir: { path: string; cleanup: () => Promise<void> }
let savedTmpdir: string | undefined
let refStore: MemoryRefStore
beforeEach(async () => {
  dir = await tempDir()
  // Secret files go to the host's TMPDIR: point it at this test's directory to count them.
  savedTmpdir = process.env.TMPDIR
  process.env.TMPDIR = dir.path
  refStore = new MemoryRefStore({
    '{{secret:gh}}': TOKEN,
    '{{secret:gh-header}}': `Authorization: Bearer ${TOKEN}`,
  })
})
afterEach(async () => {
  if (savedTmpdir === undefined) delete process.env.TMPDIR
  else process.env.TMPDIR = savedTmpdir
  await dir.cleanup()
})

async function secretDirectories(): Promise<string[]> {
  return (await readdir(dir.path)).filter((name) => name.startsWith('lango-secret-'))
}

/** Every /proc/<pid>/cmdline that holds `needle` right now. */
async function cmdlinesHolding(needle: string): Promise<string[]> {
  const found: string[] = []
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '')
    if (cmdline.includes(needle)) found.push(cmdline.replaceAll('\0', ' '))
  }
  return found
}

/** A server on 127.0.0.1 that answers `ok` after 500 ms when the bearer token is right. */
async function slowServer(): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    setTimeout(() => {
      const ok = request.headers.authorization === `Bearer ${TOKEN}`
      response.writeHead(ok ? 200 : 401).end(ok ? 'ok' : 'denied')
    }, 500)
  }).listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` }
}

describe('{{secretfile:NAME}}: the value reaches no argv in the tree (issue 11, finding 8)', () => {
  it.runIf(hasCurl)('curl -H @file sends the header; no cmdline of any process holds the value', async () => {
    const { server, url } = await slowServer()
    try {
      const pending = run(
        `echo {{secretfile:gh-header}} > path.txt; curl -sf -H @{{secretfile:gh-header}} ${url}`,
        {
          refStore,
          cwd: dir.path,
        },
      )
      const seen: string[] = []
      let done = false
      void pending.finally(() => {
        done = true
      })
      while (!done) {
        seen.push(...(await cmdlinesHolding(TOKEN)))
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      const result = await pending
      expect(result).toMatchObject({ stdout: 'ok', exitCode: 0 })
      expect(seen).toEqual([])
      const path = (await readFile(join(dir.path, 'path.txt'), 'utf8')).trim()
      expect(path.startsWith(join(dir.path, 'lango-secret-'))).toBe(true)
      await expect(readFile(path)).rejects.toThrow()
      expect(await secretDirectories()).toEqual([])
    } finally {
      server.close()
    }
  })

  it.runIf(hasCurl)(
    'whereas the {{secret:…}} form puts the value in curl’s argv (why the file form exists)',
    async () => {
      const { server, url } = await slowServer()
      try {
        const pending = run(`curl -sf -H "Authorization: Bearer {{secret:gh}}" ${url}`, { refStore })
        await waitFor(
          async () => (await cmdlinesHolding(TOKEN)).some((cmdline) => cmdline.startsWith('curl')),
          {
            what: 'curl with the token in its argv',
          },
        )
        expect((await pending).stdout).toBe('ok')
      } finally {
        server.close()
      }
    },
  )

  it('the file is private (0600 in a 0700 directory), holds exactly the value, and output stays masked', async () => {
    const result = await run(
      'f={{secretfile:gh}}; stat -c %a "$f" "$(dirname "$f")"; cat "$f"; echo; wc -c < {{secretfile:gh}}',
      { refStore },
    )
    expect(result.stdout).toBe(`600\n700\n[secret:gh]\n${TOKEN.length}\n`)
  })

  it('works where a value token may not: single quotes, nested shells, heredocs, env values', async () => {
    const result = await run(
      [
        "sh -c 'wc -c < {{secretfile:gh}}'",
        'bash -c "wc -c < {{secretfile:gh}}"',
        "cat <<'EOF'\n{{secretfile:gh}}\nEOF",
        'test -f "$TOKEN_FILE" && echo env-ok',
      ].join('\n'),
      { refStore, env: { TOKEN_FILE: '{{secretfile:gh}}' }, cwd: dir.path },
    )
    expect(result.stdout).toMatch(
      new RegExp(`^${TOKEN.length}\\n${TOKEN.length}\\n${dir.path}/lango-secret-\\w+/1\\nenv-ok\\n$`),
    )
  })

  it('is removed however the process ends, in every spawner', async () => {
    const ends: Array<[string, () => Promise<unknown>]> = [
      ['run, exit', () => run('cat {{secretfile:gh}} > /dev/null', { refStore })],
      [
        'run, timeout',
        () => run('sleep 30 < {{secretfile:gh}}', { refStore, timeoutMs: 200, killGraceMs: 100 }),
      ],
      [
        'run, abort',
        () => run('sleep 30 < {{secretfile:gh}}', { refStore, signal: AbortSignal.timeout(200) }),
      ],
      [
        'run, no shell',
        () => run('cat {{secretfile:gh}}', { refStore, shell: join(dir.path, 'no-shell') }).catch(() => {}),
      ],
      [
        'run, refused later in the command',
        () => run('cat {{secretfile:gh}}; sh -c "echo {{secret:gh}}"', { refStore }).catch(() => {}),
      ],
      ['runWithPty, exit', () => runWithPty('cat {{secretfile:gh}} > /dev/null', { refStore })],
      [
        'runWithPty, timeout',
        () => runWithPty('sleep 30 < {{secretfile:gh}}', { refStore, timeoutMs: 200, killGraceMs: 100 }),
      ],
    ]
    for (const [name, end] of ends) {
      await end()
      expect(await secretDirectories(), name).toEqual([])
    }
    await using registry = new ProcessRegistry({ refStore, ptyDriver: nodePtyDriver(), killGraceMs: 100 })
    for (const pty of [false, true]) {
      const exits = await registry.start('cat {{secretfile:gh}} > /dev/null', { pty })
      await exits.wait()
      expect(await secretDirectories(), `background exit, pty ${pty}`).toEqual([])
      const killed = await registry.start('sleep 30 < {{secretfile:gh}}', { pty })
      expect(await secretDirectories()).toHaveLength(1)
      await killed.kill()
      expect(await secretDirectories(), `background kill, pty ${pty}`).toEqual([])
      const timed = await registry.start('sleep 30 < {{secretfile:gh}}', { pty, timeoutMs: 200 })
      await timed.wait()
      expect(await secretDirectories(), `background timeout, pty ${pty}`).toEqual([])
    }
    await expect(
      registry.start('cat {{secretfile:gh}}', { shell: join(dir.path, 'no-shell') }),
    ).rejects.toBeInstanceOf(ExecError)
    expect(await secretDirectories(), 'background, no shell').toEqual([])
  })

  it.each(['exit', 'signal'])('is removed when the host goes (%s)', async (mode) => {
    const host = fileURLToPath(new URL('./__fixtures__/secret-file-host.mjs', import.meta.url))
    const child = spawn(process.execPath, [host, mode], {
      env: { ...process.env, TMPDIR: dir.path },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let output = ''
    child.stdout.on('data', (chunk) => {
      output += chunk
    })
    const exited = once(child, 'exit')
    await waitFor(() => output.includes('ready'), { intervalMs: 25 })
    if (mode === 'signal') child.kill('SIGTERM')
    await exited
    expect(await secretDirectories()).toEqual([])
  })
})
