/**
 * A delivery target is refused when a job names it, not at every delivery, when the channel is
 * there but its adapter would refuse the chat (the adapter's `checkChat`): a Telegram chat outside
 * `allowed_chats`, a bare `slack` or `discord` target with no `default_channel`, a channel of the
 * wrong form. Against a real server with a fake Telegram, Slack and Discord on loopback; the alerts'
 * targets are checked the same way at start, and a saved workflow file written by hand (which no
 * tool checked) is scheduled with its undeliverable targets named in a warning. A Slack or Discord
 * `allowed_channels` in lango.yaml is the same check: a channel outside it is refused when a job names
 * it, the channels in it deliver.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config/load.js'
import { serve } from '../src/serve.js'
import {
  type FakeService,
  type FakeSlack,
  recordingLogger,
  startFakeDiscord,
  startFakeSlack,
} from './fixtures/fake-chat-apis.js'
import { type FakeTelegram, startFakeTelegram } from './fixtures/fake-telegram.js'
import { startTestServer, type TestServer, testConfig } from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

const SLACK_TOKEN = 'xoxb-test-token-0123456789'
const DISCORD_TOKEN = 'discord-test-token-0123456789'
let telegram: FakeTelegram
let slack: FakeSlack
let discord: FakeService
let server: TestServer

beforeAll(async () => {
  telegram = await startFakeTelegram()
  slack = await startFakeSlack({ token: SLACK_TOKEN })
  discord = await startFakeDiscord({ token: DISCORD_TOKEN })
  server = await startTestServer(
    (config) => ({ ...config, alerts: { ...config.alerts, deliverTo: ['telegram:99'] } }),
    {
      LANGO_TELEGRAM_TOKEN: telegram.token,
      LANGO_TELEGRAM_API_URL: telegram.url,
      LANGO_TELEGRAM_ALLOWED_CHATS: '42',
      LANGO_SLACK_TOKEN: SLACK_TOKEN,
      LANGO_SLACK_API_URL: slack.url,
      LANGO_DISCORD_TOKEN: DISCORD_TOKEN,
      LANGO_DISCORD_API_URL: discord.url,
    },
  )
})
afterAll(async () => {
  await server?.dispose()
  await telegram?.close()
  await slack?.close()
  await discord?.close()
})

async function call(method: string, path: string, json: Json): Promise<{ status: number; body: Json }> {
  const response = await server.request(path, { method, json })
  return { status: response.status, body: (await response.json()) as Json }
}

/** A shell job (`cron_add_shell`) through the operator API. */
function createJob(name: string, deliverTo: string[]): Promise<{ status: number; body: Json }> {
  return call('POST', '/api/cron/jobs', {
    kind: 'shell',
    name,
    schedule_type: 'every',
    schedule: '1h',
    command: 'true',
    deliver_to: deliverTo,
  })
}

async function jobNames(): Promise<string[]> {
  const body = (await (await server.request('/api/cron/jobs')).json()) as Json
  return body.jobs.map((job: Json) => job.name)
}

describe('a target whose chat the channel would refuse is refused when the job is made', () => {
  it.each([
    ['telegram:99', 'telegram: chat 99 is not an allowed chat'],
    ['slack', 'slack: a bare target needs a default channel'],
    ['slack:ops/alerts', 'slack: a channel is an id such as C0123ABCD'],
    ['discord', 'discord: a bare target needs a default channel'],
    ['discord:general', 'discord: a channel is a numeric id'],
  ])('%s: 400, naming the target and why; nothing stored', async (target, why) => {
    const refused = await createJob('refused-target', ['telegram:42', target])
    expect(refused.status).toBe(400)
    expect(refused.body.error).toMatchObject({
      code: 'TOOL_INVALID_PARAMETERS',
      message: `invalid parameters: deliver_to: "${target}" cannot be delivered to: ${why}`,
    })
    expect(await jobNames()).not.toContain('refused-target')
  })

  it('targets the channels accept are taken; an agent job (cron_add) and an update are checked the same way', async () => {
    const targets = ['telegram:42', 'telegram', 'slack:C0123ABCD', 'discord:123456789012345678']
    const created = await createJob('accepted-targets', targets)
    expect(created.status).toBe(200)
    expect(created.body.job.deliver_to).toEqual(targets)
    const agentJob = await call('POST', '/api/cron/jobs', {
      name: 'refused-agent-job',
      schedule_type: 'every',
      schedule: '1h',
      prompt: 'Say hello',
      deliver_to: ['telegram:99'],
    })
    expect(agentJob.status).toBe(400)
    expect(agentJob.body.error.message).toMatch(
      /"telegram:99" cannot be delivered to: telegram: chat 99 is not/,
    )
    const update = await call('PATCH', `/api/cron/jobs/${created.body.job.id}`, {
      deliver_to: ['telegram:99'],
    })
    expect(update.status).toBe(400)
    expect(update.body.error).toMatchObject({
      code: 'TOOL_INVALID_PARAMETERS',
      message:
        'invalid parameters: deliver_to: "telegram:99" cannot be delivered to: telegram: chat 99 is not an allowed chat',
    })
    const stored = (await (await server.request(`/api/cron/jobs/${created.body.job.id}`)).json()) as Json
    expect(stored.job.deliver_to).toEqual(targets)
    expect(await jobNames()).not.toContain('refused-agent-job')
  })

  it('alerts.deliver_to naming a chat Telegram would refuse is failing from the start', async () => {
    const status = (await (await server.request('/api/alerts')).json()) as Json
    expect(status).toMatchObject({
      failing: true,
      last_error: 'telegram:99: telegram: chat 99 is not an allowed chat',
    })
  })
})

describe('a saved workflow file written by hand (not through workflow_save, which checks its targets)', () => {
  it('is scheduled, and its undeliverable targets are named in a warning at start', async () => {
    const made = await testConfig()
    try {
      await mkdir(made.config.workflow.directory, { recursive: true })
      await writeFile(
        join(made.config.workflow.directory, 'nightly.flow.yaml'),
        'name: nightly\nschedule: "0 3 * * *"\ndeliver_to: [log, slakc:C0123]\nsteps:\n  - id: a\n    run: echo nightly\n',
      )
      const logger = recordingLogger()
      const running = await serve({ config: made.config, logger, passphrase: '', closeGraceMs: 200 })
      try {
        expect(logger.entries.filter((entry) => entry.message.startsWith('saved workflow delivers'))).toEqual(
          [
            {
              level: 'warn',
              message: 'saved workflow delivers where nothing can be delivered: its results there fail',
              fields: {
                workflow: 'nightly',
                targets: { 'slakc:C0123': 'the slakc channel is not configured' },
              },
            },
          ],
        )
        expect((await running.app.cron.get('workflow.nightly')).deliverTo).toEqual(['log', 'slakc:C0123'])
      } finally {
        await running.close()
      }
    } finally {
      await rm(made.home, { recursive: true, force: true })
    }
  })
})

describe('channels.slack.allowed_channels and channels.discord.allowed_channels in lango.yaml', () => {
  it('a job delivering outside them is refused when it is made; the allowed channels and the default deliver', async () => {
    const home = await mkdtemp(join(tmpdir(), 'lango-allowed-channels-'))
    await writeFile(
      join(home, 'lango.yaml'),
      [
        'server: { host: 127.0.0.1, port: 0 }',
        'channels:',
        '  slack: { default_channel: C0123ABCD, allowed_channels: [C0123ABCD, C0555EEEE] }',
        '  discord: { allowed_channels: ["123456789012345678"] }',
        '',
      ].join('\n'),
    )
    const config = await loadConfig({
      env: {
        LANGO_HOME: home,
        LANGO_SLACK_TOKEN: SLACK_TOKEN,
        LANGO_SLACK_API_URL: slack.url,
        LANGO_DISCORD_TOKEN: DISCORD_TOKEN,
        LANGO_DISCORD_API_URL: discord.url,
      },
      cwd: home,
      home,
    })
    const running = await serve({ config, logger: recordingLogger(), passphrase: '', closeGraceMs: 200 })
    const post = async (path: string, json: Json) => {
      const response = await fetch(`${running.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(json),
      })
      return { status: response.status, body: (await response.json()) as Json }
    }
    const job = (name: string, deliverTo: string[]) =>
      post('/api/cron/jobs', {
        kind: 'shell',
        name,
        schedule_type: 'every',
        schedule: '1h',
        command: `echo ${name}`,
        deliver_to: deliverTo,
      })
    try {
      for (const [target, why] of [
        ['slack:C0999ZZZZ', 'slack: channel C0999ZZZZ is not allowed'],
        ['discord:876543210987654321', 'discord: channel 876543210987654321 is not allowed'],
      ] as const) {
        const refused = await job('outside', [target])
        expect(refused.status).toBe(400)
        expect(refused.body.error).toMatchObject({
          code: 'TOOL_INVALID_PARAMETERS',
          message: `invalid parameters: deliver_to: "${target}" cannot be delivered to: ${why}`,
        })
      }
      const slackBefore = slack.requests.length
      const discordBefore = discord.requests.length
      const made = await job('inside', ['slack', 'slack:C0555EEEE', 'discord:123456789012345678'])
      expect(made.status).toBe(200)
      expect((await post(`/api/cron/jobs/${made.body.job.id}/trigger`, {})).status).toBeLessThan(300)
      const posted = await slack.waitForRequests(slackBefore + 2)
      expect(
        posted
          .slice(slackBefore)
          .map((request) => (request.body as Json).channel)
          .sort(),
      ).toEqual(['C0123ABCD', 'C0555EEEE'])
      const sent = await discord.waitForRequests(discordBefore + 1)
      expect(sent[discordBefore]?.path).toContain('/channels/123456789012345678/messages')
    } finally {
      await running.close()
      await rm(home, { recursive: true, force: true })
    }
  })
})
