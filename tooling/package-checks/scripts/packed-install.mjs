// Installs the packages as a user does (issue 24, item 1): `pnpm pack` every publishable package of
// the workspace, `npm install --global` the tarballs into a temporary prefix (npm, not pnpm: a
// user's `npm i -g` is the contract), then runs the README's first-job walkthrough against that
// install: `lango serve --port 0` on a temporary LANGO_HOME, a shell cron job added, triggered and
// completed through the CLI, `lango doctor`, `lango mcp` over stdio, the dashboard's assets, stop.
//
// Needs a build first (`pnpm build`) and `pnpm` on PATH (or PNPM="npx --yes pnpm@…"). npm compiles
// better-sqlite3 (and node-pty) from source for the Node that runs this script: about a minute per
// module; on another Node line point `npm_config_nodedir` at its headers (.ci/run does for Node 24).
// Exits non-zero on any failure, with what failed and the output that shows why.
import { execFileSync, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const pnpm = (process.env.PNPM ?? 'pnpm').split(' ')
const work = mkdtempSync(join(tmpdir(), 'lango-packed-'))
const keep = process.argv.includes('--keep')
// `--reuse <prefix>`: skip packing and installing, run the walkthrough against an earlier install
// (one kept with `--keep`: <work directory>/prefix), when changing the walkthrough itself.
const reuseIndex = process.argv.indexOf('--reuse')
const reuse = reuseIndex === -1 ? undefined : resolve(process.argv[reuseIndex + 1] ?? '')
const started = Date.now()
const STEP_TIMEOUT_MS = 60_000
const INSTALL_TIMEOUT_MS = 10 * 60_000

/** Seconds since the start, for the step log. */
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`

function step(label) {
  process.stdout.write(`▶ ${label} (at ${elapsed()})\n`)
}

class CheckFailed extends Error {}

function fail(message) {
  throw new CheckFailed(message)
}

/** Every workspace package that is not private: its directory and manifest. */
function publishablePackages() {
  const found = []
  for (const group of ['packages', 'apps', 'tooling']) {
    for (const entry of readdirSync(join(root, group)).sort()) {
      const file = join(root, group, entry, 'package.json')
      if (!existsSync(file)) continue
      const manifest = JSON.parse(readFileSync(file, 'utf8'))
      if (manifest.private !== true) found.push({ directory: join(root, group, entry), manifest })
    }
  }
  return found
}

/** The package.json inside a tarball, as npm will read it. */
function packedManifest(tarball) {
  return JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }))
}

/** Runs a command to its end with a time limit; resolves with its exit code and output. */
function run(command, args, options = {}) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], ...options })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeout ?? STEP_TIMEOUT_MS)
    child.once('error', reject)
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      resolvePromise({ code, signal, stdout, stderr })
    })
    child.stdin.end(options.input ?? '')
  })
}

const prefix = reuse ?? join(work, 'prefix')
const home = join(work, 'home')
const lango = join(prefix, 'bin', 'lango')
const langoEnv = {
  ...process.env,
  PATH: `${join(prefix, 'bin')}:${process.env.PATH}`,
  LANGO_HOME: home,
  LANGO_LOG_LEVEL: 'warn',
  NO_COLOR: '1',
}

/** `lango … --json` against the installed bin: the parsed document, or a failure with the output. */
async function langoJson(args, url, expectedCode = 0) {
  const result = await run(lango, [...args, '--json'], { env: { ...langoEnv, LANGO_URL: url } })
  let data
  try {
    data = JSON.parse(result.stdout)
  } catch {
    fail(
      `lango ${args.join(' ')} --json: stdout is not one JSON document\n${result.stdout}\n${result.stderr}`,
    )
  }
  if (result.code !== expectedCode)
    fail(
      `lango ${args.join(' ')} exited ${result.code}, expected ${expectedCode}\n${result.stdout}\n${result.stderr}`,
    )
  return data
}

/** Starts the installed `lango serve --port 0` and waits for the address it announces. */
function startServe() {
  const child = spawn(lango, ['serve', '--port', '0'], { env: langoEnv, stdio: ['ignore', 'pipe', 'pipe'] })
  return new Promise((resolvePromise, reject) => {
    let text = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new CheckFailed(`lango serve announced no address within ${STEP_TIMEOUT_MS / 1000} s:\n${text}`))
    }, STEP_TIMEOUT_MS)
    child.stderr.on('data', (chunk) => {
      text += chunk
      const url = /^lango listening on (http:\/\/\S+)$/m.exec(text)?.[1]
      if (url !== undefined) {
        clearTimeout(timer)
        resolvePromise({ child, url, output: () => text })
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new CheckFailed(`lango serve exited ${code} before listening:\n${text}`))
    })
  })
}

/** One MCP session over `lango mcp`'s stdio: initialize, then tools/list; the tools' names. */
async function mcpToolNames() {
  const messages = [
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'packed-install', version: '0' },
      },
    },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} },
  ]
  const child = spawn(lango, ['mcp'], { env: langoEnv, stdio: ['pipe', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const answer = new Promise((resolvePromise, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          new CheckFailed(
            `lango mcp: no tools/list answer within ${STEP_TIMEOUT_MS / 1000} s\n${stdout}\n${stderr}`,
          ),
        ),
      STEP_TIMEOUT_MS,
    )
    child.stdout.on('data', (chunk) => {
      stdout += chunk
      // Only complete lines: a large answer (tools/list with every output schema) arrives in
      // several chunks, and the last piece has no newline yet.
      const complete = stdout.split('\n').slice(0, -1)
      for (const line of complete.filter((candidate) => candidate.trim() !== '')) {
        let message
        try {
          message = JSON.parse(line)
        } catch {
          clearTimeout(timer)
          reject(new CheckFailed(`lango mcp wrote something that is not JSON-RPC on stdout: ${line}`))
          return
        }
        if (message.id === 2) {
          clearTimeout(timer)
          resolvePromise(message)
        }
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new CheckFailed(`lango mcp exited ${code}\n${stdout}\n${stderr}`))
    })
  })
  for (const message of messages) child.stdin.write(`${JSON.stringify(message)}\n`)
  try {
    const reply = await answer
    if (reply.error !== undefined) fail(`lango mcp tools/list failed: ${JSON.stringify(reply.error)}`)
    return reply.result.tools.map((tool) => tool.name)
  } finally {
    child.removeAllListeners('exit')
    child.stdin.end()
    child.kill('SIGTERM')
  }
}

/**
 * A registry for the `@lango` scope only, on loopback, serving the packed tarballs: npm resolves
 * `npm i -g @lango/server` exactly as it will after publishing (each package's own dependencies,
 * nested the way npm nests them), while every other package comes from the npm registry.
 */
async function startScopeRegistry(tarballs) {
  const packuments = new Map()
  const files = new Map()
  const registry = createServer((request, response) => {
    const path = decodeURIComponent((request.url ?? '/').split('?')[0] ?? '/')
    const file = files.get(path)
    if (file !== undefined) {
      response.writeHead(200, { 'content-type': 'application/octet-stream' }).end(readFileSync(file))
      return
    }
    const packument = packuments.get(path.slice(1))
    if (packument === undefined) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}')
      return
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(packument))
  })
  await new Promise((resolvePromise) => registry.listen(0, '127.0.0.1', resolvePromise))
  const url = `http://127.0.0.1:${registry.address().port}/`
  for (const tarball of tarballs) {
    const manifest = packedManifest(tarball)
    const bytes = readFileSync(tarball)
    const tarballPath = `/-/${manifest.name}-${manifest.version}.tgz`
    files.set(tarballPath, tarball)
    packuments.set(manifest.name, {
      name: manifest.name,
      'dist-tags': { latest: manifest.version },
      versions: {
        [manifest.version]: {
          ...manifest,
          dist: {
            tarball: new URL(tarballPath.slice(1), url).href,
            shasum: createHash('sha1').update(bytes).digest('hex'),
            integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
          },
        },
      },
    })
  }
  return { url, close: () => new Promise((resolvePromise) => registry.close(resolvePromise)) }
}

let server
let registry
try {
  console.log(`node ${process.version}, work directory ${work}`)

  if (reuse === undefined) {
    step('pnpm pack every publishable package')
    const packs = join(work, 'packs')
    mkdirSync(packs)
    const packages = publishablePackages()
    const filters = packages.flatMap(({ manifest }) => ['--filter', manifest.name])
    execFileSync(
      pnpm[0],
      [...pnpm.slice(1), '--recursive', ...filters, 'pack', '--pack-destination', packs],
      {
        cwd: root,
        stdio: 'ignore',
      },
    )
    const tarballs = readdirSync(packs)
      .filter((name) => name.endsWith('.tgz'))
      .map((name) => join(packs, name))
    if (tarballs.length !== packages.length)
      fail(`packed ${tarballs.length} tarballs for ${packages.length} packages`)
    console.log(`  ${packages.map(({ manifest }) => manifest.name).join(', ')}`)

    step('the packed manifests depend only on published packages')
    const published = new Set(packages.map(({ manifest }) => manifest.name))
    for (const tarball of tarballs) {
      const manifest = packedManifest(tarball)
      for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies']) {
        for (const [name, range] of Object.entries(manifest[field] ?? {})) {
          if (/^(workspace|catalog|link|file):/.test(range))
            fail(`${manifest.name} ${field}.${name} is still "${range}" after packing`)
          const target = /^npm:(@[^@/]+\/[^@]+|[^@]+)@/.exec(range)?.[1] ?? name
          if (target.startsWith('@lango/') && !published.has(target))
            fail(
              `${manifest.name} ${field}.${name} needs ${target}, which is private (bundle it or make it a devDependency)`,
            )
        }
      }
      if (manifest.name === '@lango/server') {
        if (manifest.private === true) fail('@lango/server is private')
        if (manifest.bin?.lango === undefined) fail('@lango/server has no `lango` bin')
        if (manifest.optionalDependencies?.['node-pty'] === undefined)
          fail('node-pty is not optional in @lango/server')
      }
    }

    step('npm install --global @lango/server into a temporary prefix (builds the native modules)')
    registry = await startScopeRegistry(tarballs)
    const { version } = packages.find(({ manifest }) => manifest.name === '@lango/server').manifest
    const installed = await run(
      'npm',
      [
        'install',
        '--global',
        '--prefix',
        prefix,
        `--@lango:registry=${registry.url}`,
        '--no-audit',
        '--no-fund',
        '--loglevel',
        'error',
        `@lango/server@${version}`,
      ],
      { cwd: work, timeout: INSTALL_TIMEOUT_MS },
    )
    if (installed.code !== 0)
      fail(
        `npm install exited ${installed.code ?? installed.signal}\n${installed.stdout}\n${installed.stderr}`,
      )
    if (!existsSync(lango)) fail(`npm installed no ${lango}`)
  }
  const serverDirectory = join(prefix, 'lib', 'node_modules', '@lango', 'server')
  const assets = join(serverDirectory, 'dist', 'assets')
  if (!existsSync(join(assets, 'app.js'))) fail(`the dashboard's assets are not in the install (${assets})`)

  step('lango serve --port 0')
  mkdirSync(home)
  server = await startServe()
  console.log(`  ${server.url}`)
  const health = await fetch(`${server.url}/healthz`)
  if (!health.ok) fail(`GET /healthz answered ${health.status}`)
  const page = await fetch(`${server.url}/ui/app.js`)
  if (!page.ok) fail(`GET /ui/app.js (a dashboard asset) answered ${page.status}`)

  step('lango doctor --json against the running server')
  const doctor = await run(lango, ['doctor', '--json'], { env: { ...langoEnv, LANGO_URL: server.url } })
  const checks = JSON.parse(doctor.stdout).checks
  const byName = Object.fromEntries(checks.map((check) => [check.name, check]))
  for (const check of checks) console.log(`  ${check.status.padEnd(4)} ${check.name}: ${check.message}`)
  if (byName['better-sqlite3']?.status !== 'ok')
    fail(`better-sqlite3 does not load: ${JSON.stringify(byName['better-sqlite3'])}`)
  for (const name of ['database', 'server']) {
    if (byName[name]?.status !== 'ok') fail(`the ${name} check is not ok: ${JSON.stringify(byName[name])}`)
  }
  if (byName['node-pty'] === undefined || byName['node-pty'].status === 'fail')
    fail(`node-pty is reported as a failure (it is optional): ${JSON.stringify(byName['node-pty'])}`)

  step('the first shell cron job: add, list, trigger --wait, history, remove')
  await langoJson(
    ['cron', 'add', 'disk', '--schedule', '*/5 * * * *', '--command', 'df -h / | tail -1'],
    server.url,
  )
  const list = await langoJson(['cron', 'list'], server.url)
  if (!JSON.stringify(list).includes('"disk"'))
    fail(`lango cron list does not show disk: ${JSON.stringify(list)}`)
  const trigger = await langoJson(['cron', 'trigger', 'disk', '--wait', '--timeout', '30s'], server.url)
  const history = await langoJson(['cron', 'history', 'disk'], server.url)
  const runs = Array.isArray(history) ? history : (history.runs ?? history.entries ?? [])
  if (!runs.some((entry) => entry.status === 'completed'))
    fail(
      `no completed run in lango cron history disk: ${JSON.stringify(history)} (trigger: ${JSON.stringify(trigger)})`,
    )
  await langoJson(['cron', 'remove', 'disk'], server.url)

  step('the example workflow: validate, save, run daily-report --wait')
  const example = join(root, 'examples', 'workflows', 'daily-report.flow.yaml')
  await langoJson(['workflow', 'validate', example], server.url)
  await langoJson(['workflow', 'save', example], server.url)
  const report = await langoJson(
    ['workflow', 'run', 'daily-report', '--wait', '--timeout', '60s'],
    server.url,
  )
  if (report.status !== 'completed') fail(`the example workflow did not complete: ${JSON.stringify(report)}`)

  step('stop lango serve (SIGTERM)')
  const exited = new Promise((resolvePromise) =>
    server.child.once('exit', (code, signal) => resolvePromise({ code, signal })),
  )
  server.child.kill('SIGTERM')
  const stop = await exited
  if (stop.code !== 0) fail(`lango serve exited ${stop.code ?? stop.signal} on SIGTERM:\n${server.output()}`)
  server = undefined

  step('lango mcp (the server stopped): initialize and tools/list over stdio')
  const tools = await mcpToolNames()
  for (const name of ['exec', 'cron_add', 'workflow_run'])
    if (!tools.includes(name)) fail(`lango mcp lists no ${name}: ${tools}`)
  console.log(`  ${tools.length} tools`)

  console.log(`\n✓ packed install works on node ${process.version} (${elapsed()})`)
} catch (error) {
  console.error(
    `\n✗ packed install failed after ${elapsed()}: ${error instanceof CheckFailed ? error.message : error?.stack}`,
  )
  process.exitCode = 1
} finally {
  if (server !== undefined) server.child.kill('SIGKILL')
  await registry?.close()
  if (keep) console.log(`kept ${work}`)
  else rmSync(work, { recursive: true, force: true })
}
