import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { buildAutomationPromptSection, LANGO_EXEC_PROHIBITION, TOOL_USAGE } from './index.js'

const ALL_SUBCOMMANDS = [
  'cron',
  'bg',
  'workflow',
  'graph',
  'memory',
  'p2p',
  'security',
  'payment',
  'config',
  'doctor',
]

function firstBulletUnder(markdown: string, heading: string): string {
  const lines = markdown.split('\n')
  const start = lines.indexOf(heading)
  expect(start).toBeGreaterThanOrEqual(0)
  const bullet = lines.slice(start + 1).find((line) => line.startsWith('- '))
  expect(bullet).toBeDefined()
  return bullet as string
}

describe('TOOL_USAGE.md (seed 000: exec tool prompt safety rules)', () => {
  it('is exported as a string and shipped as the same file', () => {
    const file = readFileSync(new URL('../TOOL_USAGE.md', import.meta.url), 'utf8')
    expect(TOOL_USAGE).toBe(file)
  })

  it('has as first bullet under "### Exec Tool" the prohibition of any lango CLI command', () => {
    const bullet = firstBulletUnder(TOOL_USAGE, '### Exec Tool')
    expect(bullet).toMatch(/NEVER use `exec`/)
    expect(bullet).toMatch(/ANY `lango` CLI command/)
    for (const name of ALL_SUBCOMMANDS) expect(bullet).toContain(`lango ${name}`)
    expect(bullet).toMatch(/passphrase/)
    expect(bullet).toMatch(/ask them to run the command directly in their own terminal/)
  })
})

describe('buildAutomationPromptSection (seed 000)', () => {
  it('returns an empty string when no feature is enabled', () => {
    expect(buildAutomationPromptSection({})).toBe('')
    expect(buildAutomationPromptSection({ cron: false, background: false, workflow: false })).toBe('')
  })

  it('cron part says deliver_to is optional and auto-detected', () => {
    const section = buildAutomationPromptSection({ cron: true })
    expect(section).toContain('### Scheduled jobs (cron)')
    expect(section).toMatch(/deliver_to is optional[^\n]*auto-detected/)
    expect(section).not.toContain('### Background tasks')
    expect(section).not.toContain('### Workflows')
  })

  it('background part says channel is optional and auto-detected', () => {
    const section = buildAutomationPromptSection({ background: true })
    expect(section).toContain('### Background tasks')
    expect(section).toMatch(/channel is optional[^\n]*auto-detected/)
  })

  it('workflow part says deliver_to in the YAML is optional and auto-detected', () => {
    const section = buildAutomationPromptSection({ workflow: true })
    expect(section).toContain('### Workflows')
    expect(section).toMatch(/deliver_to in the YAML is optional[^\n]*auto-detected/)
  })

  it.each([
    { cron: true },
    { background: true },
    { workflow: true },
    { cron: true, background: true, workflow: true },
  ])('includes the comprehensive exec prohibition whenever a feature is enabled (%o)', (features) => {
    const section = buildAutomationPromptSection(features)
    expect(section).toContain(LANGO_EXEC_PROHIBITION)
    expect(section).toMatch(/NEVER use `exec`[^\n]*ANY `lango` CLI command/)
    for (const name of ALL_SUBCOMMANDS) expect(section).toContain(`\`lango ${name}\``)
    expect(section).toMatch(/and any other or future one/)
    expect(section).toMatch(/requires passphrase authentication[^\n]*non-interactive/)
    expect(section).toMatch(/ask them to run the command directly in their own terminal/)
  })
})
