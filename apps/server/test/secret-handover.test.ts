/**
 * Which variables `lango serve` hands over to the real server instead of leaving them in an
 * environment block its commands could read (issue 21; an outside probe found a database password
 * given as `?password=`, OpenTelemetry's headers and credentials in other URLs left behind).
 */
import { describe, expect, it } from 'vitest'
import { credentialsIn, secretsIn } from '../src/cli/handover.js'

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
})
