import { describe, expect, it } from 'vitest'
import { createBackgroundTools } from './background-tools.js'
import { createCronTools, createManageCronJobsTool } from './cron-tools.js'
import { createExecTools } from './exec-tools.js'
import type { AnyTool, JsonSchema } from './tool.js'
import { createWorkflowTools } from './workflow-tools.js'

// Only the schemas are read here: the services are never called.
const service = {} as never
const tools: AnyTool[] = [
  ...createExecTools({ backend: service }),
  ...createCronTools({ service }),
  createManageCronJobsTool({ service }),
  ...createBackgroundTools({ service }),
  ...createWorkflowTools({ service }),
]

/** Every property of every object schema, at any depth, as `path → schema`. */
function properties(schema: JsonSchema, path = ''): Array<[string, JsonSchema]> {
  const found: Array<[string, JsonSchema]> = []
  const own = (schema.properties ?? {}) as Record<string, JsonSchema>
  for (const [name, child] of Object.entries(own)) {
    const at = path === '' ? name : `${path}.${name}`
    found.push([at, child], ...properties(child, at))
  }
  for (const key of ['items', 'additionalProperties'] as const) {
    const nested = schema[key]
    if (typeof nested === 'object' && nested !== null) found.push(...properties(nested as JsonSchema, path))
  }
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    for (const nested of (schema[key] ?? []) as JsonSchema[]) found.push(...properties(nested, path))
  }
  return found
}

describe('published parameters are written for a model', () => {
  it('has all 22 tools of the contract, each with a unique name and a title', () => {
    expect(tools.map((tool) => tool.name).sort()).toEqual(
      [
        'bg_cancel',
        'bg_list',
        'bg_result',
        'bg_status',
        'bg_submit',
        'cron_add',
        'cron_history',
        'cron_list',
        'cron_pause',
        'cron_remove',
        'cron_resume',
        'exec',
        'exec_bg',
        'exec_status',
        'exec_stop',
        'exec_write',
        'manage_cron_jobs',
        'workflow_cancel',
        'workflow_list',
        'workflow_rerun',
        'workflow_run',
        'workflow_save',
        'workflow_status',
      ].sort(),
    )
    for (const tool of tools) expect(tool.title.length, tool.name).toBeGreaterThan(3)
  })

  it.each(tools.map((tool) => [tool.name, tool] as const))(
    '%s: every property of its JSON Schema has a description',
    (_name, tool) => {
      const missing = properties(tool.jsonSchema)
        .filter(([, schema]) => typeof schema.description !== 'string' || schema.description.length < 10)
        .map(([path]) => path)
      expect(missing).toEqual([])
    },
  )

  it('finds nested properties (manage_cron_jobs config) so the check above cannot pass vacuously', () => {
    const manage = tools.find((tool) => tool.name === 'manage_cron_jobs') as AnyTool
    expect(properties(manage.jsonSchema).map(([path]) => path)).toEqual(
      expect.arrayContaining(['action', 'config', 'config.command', 'config.prompt']),
    )
  })

  it('states units, limits and defaults', () => {
    const descriptionOf = (tool: string, path: string) => {
      const found = properties((tools.find((each) => each.name === tool) as AnyTool).jsonSchema)
      return String(found.find(([at]) => at === path)?.[1].description)
    }
    expect(descriptionOf('exec', 'timeout')).toMatch(/seconds.*1 to 600, default 30/i)
    expect(descriptionOf('workflow_run', 'wait_seconds')).toMatch(/seconds.*0 to 300, default 30/i)
    expect(descriptionOf('cron_add', 'timeout')).toMatch(/number of seconds/)
    expect(descriptionOf('cron_history', 'limit')).toMatch(/1 to 200, default 20/)
    expect(descriptionOf('exec_status', 'offset')).toMatch(/next_offset.*65536 bytes/)
  })

  it('tools without parameters publish additionalProperties: false', () => {
    const list = tools.find((tool) => tool.name === 'cron_list') as AnyTool
    expect(list.jsonSchema).toMatchObject({ type: 'object', properties: {}, additionalProperties: false })
  })
})
