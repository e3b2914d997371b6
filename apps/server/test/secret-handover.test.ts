/**
 * Which variables `lango serve` hands over to the real server instead of leaving them in an
 * environment block its commands could read (issue 21; an outside probe found a database password
 * given as `?password=`, OpenTelemetry's headers and credentials in other URLs left behind).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  credentialsIn,
  type NodeRuntime,
  proxiesKeptInPlace,
  secretsIn,
} from '../src/config/environment-credentials.js'

describe('secretsIn: the variables handed over', () => {
  it('takes every secret variable, and URL variables only when they carry a credential', () => {
    const env = {
      PATH: '/usr/bin',
      LANGO_HOME: '/srv/lango',
      LANGO_API_TOKEN: 'token-123456789',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-key=1',
      LANGO_DATABASE_URL: 'postgres://lango@db:5432/lango?password=pw-in-query',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://user:pw@collector:4318',
      LANGO_WEBHOOK_URL: 'https://hooks.slack.com/services/T0/B0/secretpath',
      LANGO_TELEGRAM_API_URL: 'http://127.0.0.1:8081',
    }
    expect(Object.keys(secretsIn(env)).sort()).toEqual([
      'LANGO_API_TOKEN',
      'LANGO_DATABASE_URL',
      'LANGO_WEBHOOK_URL',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'OTEL_EXPORTER_OTLP_HEADERS',
      'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
    ])
  })

  it('leaves URLs without a credential where they are (no supervisor for them alone)', () => {
    expect(
      secretsIn({
        LANGO_DATABASE_URL: 'postgres://lango@db:5432/lango?sslmode=require',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        LANGO_WEBHOOK_URL: 'https://example.com/',
        LANGO_MODEL_BASE_URL: 'http://127.0.0.1:11434/v1',
      }),
    ).toEqual({})
    expect(Object.keys(secretsIn({ LANGO_DATABASE_URL: 'postgres://lango:pw@db/lango' }))).toEqual([
      'LANGO_DATABASE_URL',
    ])
    expect(Object.keys(secretsIn({ LANGO_DATABASE_URL: 'postgres://db/lango?sslpassword=x' }))).toEqual([
      'LANGO_DATABASE_URL',
    ])
  })
})

describe("credentialsIn: other tools' credentials, handed over too", () => {
  it("takes variables whose name or URL value holds a credential, leaving lango's own and the rest", () => {
    const env = {
      PATH: '/usr/bin',
      HOME: '/home/op',
      AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI',
      GITHUB_TOKEN: 'ghp_x',
      PGPASSWORD: 'pw',
      HTTPS_PROXY: 'http://user:pw@proxy:3128',
      NO_PROXY: 'localhost',
      LANGO_API_TOKEN: 'token-123456789',
      LANGO_HOME: '/srv/lango',
      EMPTY_TOKEN: '',
    }
    expect(Object.keys(credentialsIn(env)).sort()).toEqual([
      'AWS_SECRET_ACCESS_KEY',
      'GITHUB_TOKEN',
      'HTTPS_PROXY',
      'PGPASSWORD',
    ])
  })

  it('leaves variables that say where a credential is, not what it is (no supervisor for an SSH or desktop session)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lango-pointers-'))
    try {
      const keyFile = join(dir, 'service-account.json')
      writeFileSync(keyFile, '{}')
      const env = {
        SSH_AUTH_SOCK: '/tmp/ssh-XXXX/agent.1234',
        GNOME_KEYRING_CONTROL: '/run/user/1000/keyring',
        SSL_KEY_FILE: '/etc/ssl/private/server.key',
        AWS_WEB_IDENTITY_TOKEN_FILE: '/var/run/secrets/eks/token',
        AZURE_CLIENT_CERTIFICATE_PATH: '/home/op/cert.pem',
        GOOGLE_APPLICATION_CREDENTIALS: keyFile,
        // A path-like value that names nothing on disk is the credential itself (ECS's credentials id).
        AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/v2/credentials/0b6f1d2e-5c4a',
        NPM_TOKEN: 'npm_abc',
      }
      expect(Object.keys(credentialsIn(env)).sort()).toEqual([
        'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
        'NPM_TOKEN',
      ])
      // A name that says "path" with a value that is not one holds the credential: handed over.
      const named = {
        REGISTRY_LOCATION: 'https://bot:hunter2@registry.example',
        MONGO_DIR: 'mongodb://user:pw@db/app',
        GITHUB_TOKEN_PATH: 'ghp_abc',
      }
      expect(Object.keys(credentialsIn(named)).sort()).toEqual([
        'GITHUB_TOKEN_PATH',
        'MONGO_DIR',
        'REGISTRY_LOCATION',
      ])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("a proxy URL with a password and Node's own proxy support (NODE_USE_ENV_PROXY)", () => {
  const proxy = {
    HTTPS_PROXY: 'http://op:pw@proxy:3128',
    HTTP_PROXY: 'http://op:pw@proxy:3128',
    NO_PROXY: 'localhost',
  }
  const node = (version: string, appliesProxyLater: boolean): NodeRuntime => ({ version, appliesProxyLater })

  it('is handed over when Node does not read it at start, or can apply it after the handover', () => {
    for (const runtime of [node('20.20.2', false), node('22.20.0', false), node('24.21.0', true)]) {
      const env = { ...proxy, NODE_USE_ENV_PROXY: '1' }
      expect(Object.keys(credentialsIn(env, runtime)).sort(), runtime.version).toEqual([
        'HTTPS_PROXY',
        'HTTP_PROXY',
      ])
      expect(proxiesKeptInPlace(env, runtime)).toEqual([])
    }
  })

  it('stays in place, and is reported, where Node reads it at start and cannot apply it later', () => {
    for (const env of [
      { ...proxy, NODE_USE_ENV_PROXY: '1' },
      { ...proxy, NODE_OPTIONS: '--max-old-space-size=512 --use-env-proxy' },
    ]) {
      for (const runtime of [node('22.21.0', false), node('24.5.0', false)]) {
        expect(credentialsIn(env, runtime), runtime.version).toEqual({})
        expect(proxiesKeptInPlace(env, runtime).sort()).toEqual(['HTTPS_PROXY', 'HTTP_PROXY'])
      }
    }
    // Without Node's proxy support asked for, nothing reads it at start: handed over.
    expect(Object.keys(credentialsIn(proxy, node('24.5.0', false))).sort()).toEqual([
      'HTTPS_PROXY',
      'HTTP_PROXY',
    ])
  })
})
