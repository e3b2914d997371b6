/**
 * An outside probe: a misspelt factory option (`maxTimeoutSecond: 5`) was dropped without a word,
 * so the agent could ask for the default 600 s. Every factory now refuses a key it does not know
 * with `TOOL_INVALID_PARAMETERS` naming it, the closest accepted key and every accepted key, before
 * any tool is built. Through the public API, with real services.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BackgroundManager } from '@lango/background'
import { RecordingAgentRunner, RecordingChannelSender } from '@lango/background/testing'
import { CronService } from '@lango/cron'
import { MemoryCronStore } from '@lango/cron/testing'
import { blockLangoExec, ProcessRegistry, run } from '@lango/exec'
import { WorkflowDirectory, WorkflowEngine } from '@lango/workflow'
import { MemoryWorkflowStore } from '@lango/workflow/testing'
import { McpServer } from '@modelcontextprotocol/server'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { toAiSdkTools } from '../src/ai-sdk/index.js'
import {
  createBackgroundTools,
  createCronTools,
  createExecTools,
  createManageCronJobsTool,
  createWorkflowTools,
  ToolError,
} from '../src/index.js'
import { registerTools } from '../src/mcp/index.js'

const unknownOption = (key: string, suggestion?: string) =>
  expect.objectContaining({
    name: 'ToolError',
    code: 'TOOL_INVALID_PARAMETERS',
    message: expect.stringContaining(`unknown option "${key}"`),
    data: expect.objectContaining({
      option: key,
      accepted: expect.any(Array),
      ...(suggestion === undefined ? {} : { suggestion }),
    }),
  })

function thrown(action: () => unknown): unknown {
  try {
    action()
  } catch (error) {
    return error
  }
  throw new Error('expected a throw')
}

let dir: string
let registry: ProcessRegistry
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lango-tools-keys-'))
  registry = new ProcessRegistry()
})
afterEach(async () => {
  await registry.stop()
  await rm(dir, { recursive: true, force: true })
})

describe('unknown option keys', () => {
  it('createExecTools refuses a misspelt option, naming it, the closest key and what is accepted', () => {
    const backend = { run, registry, blockLangoExec }
    const error = thrown(() => createExecTools({ backend, maxTimeoutSecond: 5 } as never))
    expect(error).toEqual(unknownOption('maxTimeoutSecond', 'maxTimeoutSeconds'))
    expect(ToolError.is(error)).toBe(true)
    expect((error as Error).message).toBe(
      'unknown option "maxTimeoutSecond" in createExecTools options (did you mean "maxTimeoutSeconds"?); accepted: backend, automationAvailable, defaultTimeoutSeconds, maxTimeoutSeconds, maxStatusBytes',
    )
    expect(thrown(() => createExecTools({ backend, automationAvailable: { crom: false } } as never))).toEqual(
      unknownOption('crom', 'cron'),
    )
    // Every accepted key still passes.
    const tools = createExecTools({
      backend,
      automationAvailable: { cron: true, background: false, workflow: true },
      defaultTimeoutSeconds: 10,
      maxTimeoutSeconds: 20,
      maxStatusBytes: 1024,
    })
    expect(tools.map((tool) => tool.name)).toContain('exec')
  })

  it('the cron, background and workflow factories refuse unknown keys', async () => {
    const cron = new CronService({ store: new MemoryCronStore() })
    expect(
      thrown(() => createCronTools({ service: cron, defaultDeliverTo: [], spnd: undefined } as never)),
    ).toEqual(unknownOption('spnd', 'spend'))
    expect(
      thrown(() => createManageCronJobsTool({ service: cron, defaultDeliveryTo: ['webhook'] } as never)),
    ).toEqual(unknownOption('defaultDeliveryTo', 'defaultDeliverTo'))
    const background = new BackgroundManager({
      agentRunner: new RecordingAgentRunner(),
      channelSender: new RecordingChannelSender(),
    })
    expect(
      thrown(() => createBackgroundTools({ service: background, maxPromptLenght: 10 } as never)),
    ).toEqual(unknownOption('maxPromptLenght', 'maxPromptLength'))
    const engine = new WorkflowEngine({ store: new MemoryWorkflowStore() })
    const directory = await WorkflowDirectory.open(join(dir, 'workflows'))
    expect(
      thrown(() => createWorkflowTools({ service: { engine, directory }, maxWaitSecs: 5 } as never)),
    ).toEqual(unknownOption('maxWaitSecs', 'maxWaitSeconds'))
    // Every accepted key still passes.
    expect(
      createCronTools({ service: cron, defaultDeliverTo: ['webhook'], checkTarget: () => undefined }),
    ).toHaveLength(6)
    expect(
      createBackgroundTools({ service: background, defaultChannel: 'webhook', maxPromptLength: 10 }),
    ).toHaveLength(5)
    expect(
      createWorkflowTools({ service: { engine, directory }, maxWaitSeconds: 5, progressIntervalSeconds: 1 })
        .length,
    ).toBeGreaterThan(0)
    await background.stop()
  })

  it('registerTools and toAiSdkTools refuse unknown keys before registering anything', () => {
    const tools = createExecTools({ backend: { run, registry, blockLangoExec } })
    const server = new McpServer({ name: 'probe', version: '1.0.0' })
    expect(thrown(() => registerTools(server, tools, { sesionKey: 'mcp' } as never))).toEqual(
      unknownOption('sesionKey', 'sessionKey'),
    )
    expect(registerTools(server, tools, { sessionKey: 'mcp' })).toHaveLength(tools.length)
    expect(thrown(() => toAiSdkTools(tools, { polcy: 'none' } as never))).toEqual(
      unknownOption('polcy', 'policy'),
    )
    expect(thrown(() => toAiSdkTools(tools, { approvalTimeout: 5 } as never))).toEqual(
      unknownOption('approvalTimeout', 'approvalTimeoutMs'),
    )
    expect(
      Object.keys(toAiSdkTools(tools, { policy: 'none', sessionKey: 'ai', creator: 'me', nesting: 0 })),
    ).toEqual(tools.map((tool) => tool.name))
  })
})
