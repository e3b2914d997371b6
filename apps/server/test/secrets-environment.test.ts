/**
 * Issue 21 (2): nothing the server runs can read the server's own secrets. A shell cron job reads
 * every ancestor's `/proc/<pid>/environ` and `cmdline` up to pid 1 into a file of its own (past the
 * output masker) and prints the files the secrets came from; with the secrets given each supported
 * way (environment, `*_FILE`, systemd's `$CREDENTIALS_DIRECTORY`, lango.yaml) no ancestor holds
 * one, and the run's recorded result shows each as `[secret:…]`, never its value. Then the
 * supervisor `lango serve` becomes with secrets in its environment stops its server on SIGTERM and
 * exits with its code. Linux only (`/proc`).
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startWebhookReceiver } from './fixtures/fake-chat-apis.js'
import { reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { startFakeTelegram } from './fixtures/fake-telegram.js'
import { startForwardProxy } from './fixtures/forward-proxy.js'
import { until } from './fixtures/http-server.js'
import { announcedUrl, CLI, runShellJobOnce, spawnServe } from './fixtures/lango-serve.js'
import { startOtlpReceiver } from './fixtures/otlp-receiver.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {})
})

/** A value no other process on the machine holds: a test run's own. */
const fresh = (name: string): string => `${name}-${randomBytes(9).toString('hex')}`

interface Secrets {
  readonly LANGO_PASSPHRASE: string
  readonly LANGO_API_TOKEN: string
  readonly LANGO_MODEL_API_KEY: string
  readonly LANGO_TELEGRAM_TOKEN: string
  readonly LANGO_WEBHOOK_SECRET: string
}

type Way = 'environment' | 'files' | 'credentials' | 'lango.yaml'

/** Starts `lango serve` on a new home with `secrets` given `way`; the files that hold them are listed. */
async function startServe(
  way: Way,
  secrets: Secrets,
  services: { model: string; telegram: string; webhook: string; otlp: string },
  otlpSecret: string,
) {
  const home = await mkdtemp(join(tmpdir(), 'lango-secrets-env-'))
  const vault = join(home, 'secrets')
  await mkdir(vault, { mode: 0o700 })
  const env: Record<string, string> = {
    LANGO_HOME: home,
    LANGO_LOG_LEVEL: 'warn',
    LANGO_MODEL_BASE_URL: services.model,
    LANGO_MODEL: 'test-model',
    LANGO_TELEGRAM_API_URL: services.telegram,
    LANGO_WEBHOOK_URL: services.webhook,
    OTEL_EXPORTER_OTLP_ENDPOINT: services.otlp,
  }
  const files: string[] = []
  let yaml = 'cron: { min_interval: 1s }\n'
  for (const [variable, value] of Object.entries(secrets)) {
    if (way === 'environment') env[variable] = value
    else if (way === 'files' || (way === 'lango.yaml' && variable === 'LANGO_PASSPHRASE')) {
      const file = join(vault, variable.toLowerCase())
      await writeFile(file, `${value}\n`, { mode: 0o600 })
      env[`${variable}_FILE`] = file
      files.push(file)
    } else if (way === 'credentials') {
      const file = join(vault, variable)
      await writeFile(file, value, { mode: 0o600 })
      files.push(file)
    }
  }
  if (way === 'credentials') env.CREDENTIALS_DIRECTORY = vault
  // OpenTelemetry's own variable for the exporter's credentials (an outside probe found it left in
  // the server's environment and unmasked): given the way the others are.
  const otlpHeaders = `authorization=Bearer%20${otlpSecret}`
  if (way === 'environment') env.OTEL_EXPORTER_OTLP_HEADERS = otlpHeaders
  else if (way === 'files' || way === 'credentials') {
    const file = join(vault, way === 'files' ? 'otel_headers' : 'OTEL_EXPORTER_OTLP_HEADERS')
    await writeFile(file, otlpHeaders, { mode: 0o600 })
    if (way === 'files') env.OTEL_EXPORTER_OTLP_HEADERS_FILE = file
    files.push(file)
  }
  if (way === 'lango.yaml') {
    yaml += [
      `server: { api_token: ${secrets.LANGO_API_TOKEN} }`,
      `model: { api_key: ${secrets.LANGO_MODEL_API_KEY} }`,
      `channels: { telegram: { token: ${secrets.LANGO_TELEGRAM_TOKEN} }, webhook: { secret: ${secrets.LANGO_WEBHOOK_SECRET} } }`,
      `telemetry: { otlp: { headers: { authorization: "Bearer ${otlpSecret}" } } }`,
      '',
    ].join('\n')
    files.push(join(home, 'lango.yaml'))
  }
  await writeFile(join(home, 'lango.yaml'), yaml)
  // Only what the test gives: none of this test's secrets is in its own environment.
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const url = await announcedUrl(child)
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
    await rm(home, { recursive: true, force: true })
  })
  return { home, url, child, files }
}

/** Writes each ancestor's pid, cmdline and environ, up to and including pid 1, into `file`. */
const walkAncestors = (file: string): string =>
  [
    'pid=$$',
    'while :; do',
    `  { echo "== $pid"; cat /proc/$pid/cmdline; echo; cat /proc/$pid/environ; echo; } >> ${file} 2>/dev/null`,
    '  [ "$pid" -le 1 ] && break',
    `  pid=$(sed 's/.*) //' /proc/$pid/stat | cut -d' ' -f2)`,
    'done',
  ].join('\n')

describe.skipIf(!existsSync('/proc/self/environ'))('the server keeps its secrets from what it runs', () => {
  it.each<Way>(['environment', 'files', 'credentials', 'lango.yaml'])(
    'secrets given by %s: no ancestor of a command holds one, and its output masks them',
    async (way) => {
      const secrets: Secrets = {
        LANGO_PASSPHRASE: fresh('pass phrase'),
        LANGO_API_TOKEN: fresh('api'),
        LANGO_MODEL_API_KEY: fresh('model'),
        LANGO_TELEGRAM_TOKEN: `123456:${fresh('tg')}`,
        LANGO_WEBHOOK_SECRET: fresh('hook'),
      }
      const otlpSecret = fresh('otlp')
      const otlp = await startOtlpReceiver()
      cleanups.push(() => otlp.close())
      const model = await startFakeOpenAI()
      const telegram = await startFakeTelegram({ token: secrets.LANGO_TELEGRAM_TOKEN })
      const webhook = await startWebhookReceiver()
      cleanups.push(
        () => model.close(),
        () => telegram.close(),
        () => webhook.close(),
      )
      const server = await startServe(
        way,
        secrets,
        {
          model: model.baseUrl,
          telegram: telegram.url,
          webhook: webhook.url,
          otlp: otlp.endpoint,
        },
        otlpSecret,
      )
      const ancestors = join(server.home, 'ancestors.txt')
      // What the configuration was read from, printed: the masker must hide every secret in it.
      // Given in the environment, they stay in the supervisor's, which any process of the user can
      // read: printed, each must come out masked.
      const printed =
        way === 'environment'
          ? "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -E '^(LANGO_|OTEL_)' | sort -u"
          : `cat ${server.files.join(' ')}`
      const run = await runShellJobOnce(
        server.url,
        secrets.LANGO_API_TOKEN,
        'walk',
        `${walkAncestors(ancestors)}\n${printed}`,
      )
      expect(run.status).toBe('completed')

      const walked = await readFile(ancestors, 'utf8')
      // The walk reached pid 1 through the server (its cmdline names `serve`).
      expect(walked).toMatch(/^== 1$/m)
      expect(walked).toContain('serve')
      for (const [variable, value] of Object.entries({
        ...secrets,
        OTEL_EXPORTER_OTLP_HEADERS: otlpSecret,
      })) {
        expect(walked, `${variable} in an ancestor's environment or cmdline`).not.toContain(value)
      }
      const result = String(run.result)
      for (const [variable, value] of Object.entries({
        ...secrets,
        OTEL_EXPORTER_OTLP_HEADERS: otlpSecret,
      })) {
        expect(result, `${variable} in the recorded output`).not.toContain(value)
      }
      // The exporter still sends the header, however it was given.
      await until(
        async () => otlp.authorizations.includes(`Bearer ${otlpSecret}`) || undefined,
        20_000,
        'a trace export with the configured authorization',
      )
      if (way !== 'environment') expect(result).toContain('[secret:config:')
      // The supervisor's block was read (the check above is not empty), masked.
      else expect(result).toMatch(/^OTEL_EXPORTER_OTLP_HEADERS=authorization=\[secret:config:/m)
    },
    60_000,
  )

  it("other tools' credentials in the operator's environment are in no ancestor's block, even without a lango secret", async () => {
    const home = await mkdtemp(join(tmpdir(), 'lango-secrets-env-'))
    cleanups.push(() => rm(home, { recursive: true, force: true }))
    const credentials = {
      AWS_SECRET_ACCESS_KEY: fresh('aws'),
      GITHUB_TOKEN: fresh('ghp'),
      HTTPS_PROXY: `http://operator:${fresh('proxy')}@127.0.0.1:9`,
    }
    const { child, stop } = spawnServe(home, credentials)
    cleanups.push(stop)
    const url = await announcedUrl(child)
    const ancestors = join(home, 'ancestors.txt')
    // Its own environment, then the supervisor's block (not an ancestor; any process of the user
    // can read it), printed: the server masks what it was handed over.
    const run = await runShellJobOnce(
      url,
      undefined,
      'walk',
      `${walkAncestors(ancestors)}\nenv\necho ---\ncat /proc/${child.pid}/environ | tr '\\0' '\\n' | grep -E '^(AWS_SECRET_ACCESS_KEY|GITHUB_TOKEN|HTTPS_PROXY)=' | sort`,
    )
    expect(run.status).toBe('completed')
    const walked = await readFile(ancestors, 'utf8')
    expect(walked).toMatch(/^== 1$/m)
    expect(walked).toContain('serve')
    for (const [variable, value] of Object.entries(credentials)) {
      const secret = variable === 'HTTPS_PROXY' ? (new URL(value).password as string) : value
      expect(walked, `${variable} in an ancestor's environment`).not.toContain(secret)
      expect(String(run.result), `${variable} in the command's output`).not.toContain(secret)
    }
    expect(String(run.result).split('---\n')[1]?.trim().split('\n')).toEqual([
      'AWS_SECRET_ACCESS_KEY=[secret:env:AWS_SECRET_ACCESS_KEY]',
      'GITHUB_TOKEN=[secret:env:GITHUB_TOKEN]',
      'HTTPS_PROXY=http://operator:[secret:env:HTTPS_PROXY]@127.0.0.1:9',
    ])
    // Handed over: the server is not the process started (the supervisor is).
    const health = (await (await fetch(`${url}/healthz`)).json()) as Json
    expect(Number(String(health.instance).split(':')[1])).not.toBe(child.pid)
  })

  it('variables that say where a credential is (a socket, a key file) start no supervisor, and no command gets them', async () => {
    const home = await mkdtemp(join(tmpdir(), 'lango-secrets-env-'))
    cleanups.push(() => rm(home, { recursive: true, force: true }))
    const keyFile = join(home, 'service-account.json')
    await writeFile(keyFile, '{}', { mode: 0o600 })
    const pointers = {
      SSH_AUTH_SOCK: join(home, 'agent.sock'),
      SSL_KEY_FILE: join(home, 'server.key'),
      GOOGLE_APPLICATION_CREDENTIALS: keyFile,
    }
    const { child, stop } = spawnServe(home, pointers)
    cleanups.push(stop)
    const url = await announcedUrl(child)
    // No supervisor: the server is the process started.
    const health = (await (await fetch(`${url}/healthz`)).json()) as Json
    expect(Number(String(health.instance).split(':')[1])).toBe(child.pid)
    const run = await runShellJobOnce(url, undefined, 'env', 'env')
    expect(run.status).toBe('completed')
    expect(String(run.result)).toMatch(/^PATH=/m)
    for (const variable of Object.keys(pointers)) expect(String(run.result)).not.toContain(`${variable}=`)
  })

  it.runIf(typeof (http as { setGlobalProxyFromEnv?: unknown }).setGlobalProxyFromEnv === 'function')(
    "a proxy URL with a password handed over still carries the server's requests (NODE_USE_ENV_PROXY)",
    async () => {
      const home = await mkdtemp(join(tmpdir(), 'lango-secrets-env-'))
      cleanups.push(() => rm(home, { recursive: true, force: true }))
      const model = await startFakeOpenAI([reply.text('through the proxy')])
      cleanups.push(() => model.close())
      const proxy = await startForwardProxy({ 'model.lango.test:80': new URL(model.baseUrl).host })
      cleanups.push(() => proxy.close())
      const password = fresh('proxy')
      const token = fresh('api')
      const { child, stop } = spawnServe(home, {
        LANGO_API_TOKEN: token,
        LANGO_MODEL_BASE_URL: 'http://model.lango.test/v1',
        LANGO_MODEL: 'test-model',
        NODE_USE_ENV_PROXY: '1',
        HTTP_PROXY: `${proxy.url.replace('//', `//operator:${password}@`)}`,
        NO_PROXY: 'localhost,127.0.0.1',
      })
      cleanups.push(stop)
      const url = await announcedUrl(child)
      const response = await fetch(`${url}/api/chat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ session: 'proxy', message: 'hello' }),
      })
      const body = (await response.json()) as Json
      expect(response.status, JSON.stringify(body)).toBe(200)
      expect(body.reply).toBe('through the proxy')
      expect(proxy.targets).toContain('model.lango.test:80')
      expect(proxy.authorizations).toContain(
        `Basic ${Buffer.from(`operator:${password}`).toString('base64')}`,
      )
      // And the password is not in the server's start-up environment.
      const health = (await (await fetch(`${url}/healthz`)).json()) as Json
      const serverPid = Number(String(health.instance).split(':')[1])
      expect(serverPid).not.toBe(child.pid)
      expect(await readFile(`/proc/${serverPid}/environ`, 'utf8')).not.toContain(password)
    },
    60_000,
  )

  it('a supervised server stops on SIGTERM to its supervisor, which exits with its code', async () => {
    const home = await mkdtemp(join(tmpdir(), 'lango-secrets-env-'))
    cleanups.push(() => rm(home, { recursive: true, force: true }))
    const child = spawn(process.execPath, [CLI, 'serve', '--port', '0'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANGO_HOME: home, LANGO_API_TOKEN: fresh('api') },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const url = await announcedUrl(child)
    const health = (await (await fetch(`${url}/healthz`)).json()) as Json
    // The server is another process than the one started, and not its child.
    const serverPid = Number(String(health.instance).split(':')[1])
    expect(serverPid).not.toBe(child.pid)
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
    await until(async () => {
      try {
        process.kill(serverPid, 0)
        return undefined
      } catch {
        return true
      }
    })
  })
})
