import { describe, expect, it } from 'vitest'
import type { WorkflowIssue } from './errors.js'
import { AGENT_WORKFLOW_LIMITS, TRUSTED_WORKFLOW_LIMITS } from './limits.js'
import { parseWorkflow } from './parse-workflow.js'

const FULL = `
name: daily-report
description: Morning summary
schedule: "0 9 * * *"
timezone: Europe/Berlin
deliver_to: [telegram:123]
max_parallel: 4
steps:
  - id: fetch
    prompt: "Collect today's headlines"
    agent: researcher
    timeout: 5m
  - id: size
    run: "du -sh /var/log"
  - id: summary
    depends_on: [fetch, size]
    prompt: "Summarise {{fetch.result}} and note disk use {{size.result}}"
    retry: { attempts: 2, backoff: 10s }
    continue_on_error: false
    deliver_to: [slack:C123]
`

function issuesOf(source: string, options?: Parameters<typeof parseWorkflow>[1]): WorkflowIssue[] {
  const parsed = parseWorkflow(source, options)
  if (parsed.ok) throw new Error('expected the workflow to be invalid')
  return [...parsed.issues]
}

function codes(issues: readonly WorkflowIssue[]): string[] {
  return issues.map((issue) => `${issue.path} ${issue.code}`)
}

describe('parseWorkflow: the §5 schema', () => {
  it('accepts the full example and converts it', () => {
    const parsed = parseWorkflow(FULL)
    expect(parsed.ok).toBe(true)
    if (!parsed.ok) return
    const { definition, plan, source } = parsed.workflow
    expect(source).toBe(FULL)
    expect(definition).toMatchObject({
      name: 'daily-report',
      description: 'Morning summary',
      schedule: '0 9 * * *',
      timezone: 'Europe/Berlin',
      deliverTo: ['telegram:123'],
      maxParallel: 4,
    })
    expect(definition.steps[0]).toMatchObject({
      id: 'fetch',
      kind: 'prompt',
      agent: 'researcher',
      timeoutMs: 300_000,
      continueOnError: false,
    })
    expect(definition.steps[1]).toMatchObject({
      id: 'size',
      kind: 'run',
      text: 'du -sh /var/log',
      dependsOn: [],
    })
    expect(definition.steps[2]).toMatchObject({
      id: 'summary',
      dependsOn: ['fetch', 'size'],
      retry: { attempts: 2, backoffMs: 10_000 },
      deliverTo: ['slack:C123'],
      references: ['fetch', 'size'],
    })
    expect(plan.layers).toEqual([['fetch', 'size'], ['summary']])
    expect(plan.order).toEqual(['fetch', 'size', 'summary'])
  })

  it('computes layers of a diamond', () => {
    const parsed = parseWorkflow(`name: d
steps:
  - { id: a, run: "true" }
  - { id: b, run: "true", depends_on: [a] }
  - { id: c, run: "true", depends_on: [a] }
  - { id: d, run: "true", depends_on: [b, c] }
`)
    expect(parsed.ok && parsed.workflow.plan.layers).toEqual([['a'], ['b', 'c'], ['d']])
  })

  it('reports every problem at once, each with its path, line and column', () => {
    const issues = issuesOf(`name: "bad name!"
max_parallel: 0
colour: blue
steps:
  - id: a
    run: "echo {{b.result}}"
    depend_on: [x]
  - id: a
    prompt: hi
    run: also
  - id: c
    depends_on: [nope, c]
    prompt: "{{ghost.result}}"
    timeout: 30
  - id: d
    prompt: x
    retry: { attempts: 0, backof: 1s }
  - id: e
`)
    expect(codes(issues)).toEqual(
      expect.arrayContaining([
        'name invalid_value',
        'max_parallel invalid_value',
        '<unknown> unknown_key',
        'steps[0].depend_on unknown_key',
        'steps[1].id duplicate_id',
        'steps[1] step_kind',
        'steps[2].depends_on[0] unknown_dependency',
        'steps[2].depends_on[1] self_dependency',
        'steps[2].prompt template_unknown_step',
        'steps[2].timeout invalid_duration',
        'steps[3].retry.attempts invalid_value',
        'steps[3].retry.backof unknown_key',
        'steps[4] step_kind',
        'steps[0].run template_unknown_step',
      ]),
    )
    const colour = issues.find((issue) => issue.path === '<unknown>')
    expect(colour).toMatchObject({ line: 3, column: 1 })
    const duplicate = issues.find((issue) => issue.code === 'duplicate_id')
    expect(duplicate).toMatchObject({ line: 8, message: expect.stringContaining('steps[0]') })
  })

  it('requires name and a non-empty step list', () => {
    expect(codes(issuesOf('description: x\nsteps: []\n'))).toEqual([
      'name missing_key',
      'steps invalid_value',
    ])
    expect(codes(issuesOf('name: x\n'))).toEqual(['steps missing_key'])
    expect(codes(issuesOf('- a\n- b\n'))).toEqual([' invalid_type'])
  })

  it('reports each cycle with its steps in order', () => {
    const issues = issuesOf(`name: c
steps:
  - { id: a, run: "true", depends_on: [c] }
  - { id: b, run: "true", depends_on: [a] }
  - { id: c, run: "true", depends_on: [b] }
  - { id: x, run: "true", depends_on: [y] }
  - { id: y, run: "true", depends_on: [x] }
  - { id: z, run: "true", depends_on: [a] }
`)
    const cycles = issues.filter((issue) => issue.code === 'cycle').map((issue) => issue.message)
    expect(cycles).toEqual(['dependency cycle: a → b → c → a', 'dependency cycle: x → y → x'])
  })

  it('accepts templates to ancestors further up, rejects siblings and descendants', () => {
    expect(
      parseWorkflow(`name: t
steps:
  - { id: a, run: "echo 1" }
  - { id: b, run: "echo 2", depends_on: [a] }
  - { id: c, prompt: "{{a.result}} {{ b.result }}", depends_on: [b] }
`).ok,
    ).toBe(true)
    const issues = issuesOf(`name: t
steps:
  - { id: a, run: "echo 1" }
  - { id: b, run: "echo {{a.result}}" }
  - { id: c, prompt: "{{c.result}}", depends_on: [a] }
  - { id: d, prompt: "{{a.output}}", depends_on: [a] }
`)
    expect(codes(issues)).toEqual([
      'steps[1].run template_not_ancestor',
      'steps[2].prompt template_not_ancestor',
      'steps[3].prompt template_invalid',
    ])
  })

  it('rejects placeholders where shell quoting cannot protect them', () => {
    const unsafe = [
      `echo '{{a.result}}'`,
      `echo "{{a.result}}"`,
      'echo `{{a.result}}`',
      'echo ${{a.result}}',
      'echo ${x:-{{a.result}}}',
      'echo $(( {{a.result}} + 1 ))',
      'echo \\{{a.result}}',
      'cat <<EOF\n{{a.result}}\nEOF',
      'true # {{a.result}}',
      // After `$'…\\'…'` bash is outside quotes and dash (a `/bin/sh`) inside: unsafe for one of them.
      "sed -e $'s/\\'//g' {{a.result}}",
      "echo $'\\'' {{a.result}} $'\\'''",
      "echo $'it\\'s' {{a.result}}",
      // A quote inside `${…}` is not the end of it: `"${C:-"{}"}"` leaves the shell inside double
      // quotes where a pass that took the first `}` for the end is outside (an outside probe's `$(…)`).
      'echo "${CONFIG:-"{}"}" "fetched: {{a.result}}"',
      'echo "${CONFIG:-"{}"}" {{a.result}}',
      'echo "${x:-\'}\'}" {{a.result}}',
      'echo ${x:-`echo }`} {{a.result}}',
      'echo ${x:-\\}} {{a.result}}',
      'echo ${x:-$(echo })} {{a.result}}',
    ]
    for (const command of unsafe) {
      const issues = issuesOf(
        `name: q\nsteps:\n  - { id: a, run: "true" }\n  - id: b\n    depends_on: [a]\n    run: ${JSON.stringify(command)}\n`,
      )
      expect(codes(issues), command).toEqual(['steps[1].run template_unsafe_context'])
    }
    const safe = [
      'echo {{a.result}}',
      'printf %s {{a.result}} | wc -c',
      'echo $(basename {{a.result}})',
      'X={{a.result}}; echo "$X"',
      'echo \'x\' {{a.result}} "y"',
      // `$'…'` without a backslash-quote reads the same in bash and dash.
      "printf $'%s\\n' {{a.result}}",
      // A `${…}` without quotes or expansions in it is followed.
      'echo ${HOME} "${x:-default}" ${x:-$HOME} {{a.result}}',
    ]
    for (const command of safe) {
      const parsed = parseWorkflow(
        `name: q\nsteps:\n  - { id: a, run: "true" }\n  - id: b\n    depends_on: [a]\n    run: ${JSON.stringify(command)}\n`,
      )
      expect(parsed.ok, command).toBe(true)
    }
  })

  it('refuses a NUL in a run command or a when gate at validation, not when it runs', () => {
    const issues = issuesOf(
      'name: n\nsteps:\n  - { id: a, run: "echo a\\0b" }\n  - { id: b, prompt: "hi", when: "test \\0" }\n',
    )
    expect(issues.map((issue) => [issue.path, issue.message])).toEqual([
      ['steps[0].run', expect.stringContaining('NUL')],
      ['steps[1].when', expect.stringContaining('NUL')],
    ])
  })

  it('parses durations with units and rejects bare numbers and garbage', () => {
    const ok = parseWorkflow(
      'name: d\nsteps:\n  - { id: a, run: "true", timeout: 1m30s, retry: { attempts: 3, backoff: 500ms } }\n',
    )
    expect(ok.ok && ok.workflow.definition.steps[0]).toMatchObject({
      timeoutMs: 90_000,
      retry: { attempts: 3, backoffMs: 500 },
    })
    const issues = issuesOf(
      'name: d\nsteps:\n  - { id: a, run: "true", timeout: soon }\n  - { id: b, run: "true", timeout: 99h }\n',
    )
    expect(codes(issues)).toEqual(['steps[0].timeout invalid_duration', 'steps[1].timeout invalid_duration'])
  })
})

describe('parseWorkflow: hostile input', () => {
  it('reports malformed YAML with code, line and column only — never the source text', () => {
    const secret = 'sk-live-0123456789abcdef'
    const issues = issuesOf(`name: x\nsteps: [\n  token: "${secret}\n`)
    expect(issues.length).toBeGreaterThan(0)
    for (const issue of issues) {
      expect(issue.code).toBe('yaml_syntax')
      expect(issue.line).toBeGreaterThan(0)
      expect(issue.column).toBeGreaterThan(0)
      expect(JSON.stringify(issue)).not.toContain(secret)
    }
  })

  it('never echoes scalar values in schema errors', () => {
    const secret = 'AKIAIOSFODNN7EXAMPLE-secret'
    const issues = issuesOf(
      `name: "${secret} "\nsteps:\n  - { id: a, run: 5, timeout: "${secret}", deliver_to: ["${secret} x"] }\n`,
    )
    expect(issues.length).toBe(4)
    expect(JSON.stringify(issues)).not.toContain(secret)
    expect(
      JSON.stringify(issuesOf(`${secret}: 1\nname: x\nsteps: [{ id: a, run: "true" }]\n`)),
    ).not.toContain(secret)
  })

  it('treats a private key file as not-a-workflow without echoing it', () => {
    const key =
      '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----\n'
    const issues = issuesOf(key)
    expect(codes(issues)).toEqual([' invalid_type'])
    expect(JSON.stringify(issues)).not.toContain('b3Blbn')
  })

  it('rejects duplicate keys, multiple documents and merge keys', () => {
    expect(codes(issuesOf('name: a\nname: b\nsteps: [{ id: a, run: "true" }]\n'))).toEqual([' yaml_syntax'])
    expect(codes(issuesOf('name: a\nsteps: [{ id: a, run: "true" }]\n---\nname: b\n'))).toEqual([
      ' yaml_syntax',
    ])
    const merged = issuesOf('base: &b { run: "true" }\nname: m\nsteps:\n  - { <<: *b, id: a }\n')
    expect(codes(merged)).toEqual(
      expect.arrayContaining(['<unknown> unknown_key', 'steps[0].<< unknown_key', 'steps[0] step_kind']),
    )
  })

  it('rejects __proto__ keys as unknown (and never pollutes prototypes)', () => {
    const issues = issuesOf(
      'name: p\n__proto__: { polluted: true }\nsteps:\n  - { id: a, run: "true", __proto__: 1 }\n',
    )
    expect(codes(issues)).toEqual(['__proto__ unknown_key', 'steps[0].__proto__ unknown_key'])
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('stops alias bombs before they expand', () => {
    const bomb = [
      'a: &a ["x","x","x","x","x","x","x","x","x"]',
      'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]',
      'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]',
      'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]',
      'e: [*d,*d,*d,*d,*d,*d,*d,*d,*d]',
      'name: bomb',
      'steps: [{ id: a, run: "true" }]',
    ].join('\n')
    const started = performance.now()
    expect(codes(issuesOf(bomb))).toEqual([' yaml_alias_limit'])
    expect(codes(issuesOf(bomb, { limits: TRUSTED_WORKFLOW_LIMITS }))).toEqual([' yaml_alias_limit'])
    // Before they expand: fast, with a bound generous for a loaded machine.
    expect(performance.now() - started).toBeLessThan(5_000)
    expect(
      codes(
        issuesOf('x: &x [1]\ny: *x\nname: a\nsteps: [{ id: a, run: "true" }]\n', {
          limits: { maxAliasCount: 0 },
        }),
      ),
    ).toEqual([' yaml_alias_limit'])
  })

  it('allows a few aliases (reused delivery lists)', () => {
    const parsed = parseWorkflow(
      'name: a\ndeliver_to: &t [telegram:1]\nsteps:\n  - { id: a, run: "true", deliver_to: *t }\n',
    )
    expect(parsed.ok && parsed.workflow.definition.steps[0]?.deliverTo).toEqual(['telegram:1'])
  })

  it('enforces size, step count, dependency count, string length and depth', () => {
    const big = `name: big\nsteps: [{ id: a, run: "${'x'.repeat(AGENT_WORKFLOW_LIMITS.maxSourceBytes)}" }]\n`
    expect(codes(issuesOf(big))).toEqual([' source_too_large'])
    // Multi-byte characters count as bytes, not characters.
    expect(
      codes(issuesOf(`name: big\ndescription: "${'é'.repeat(140_000)}"\nsteps: [{ id: a, run: "true" }]\n`)),
    ).toEqual([' source_too_large'])
    const many = `name: many\nsteps:\n${Array.from({ length: 101 }, (_, index) => `  - { id: s${index}, run: "true" }`).join('\n')}\n`
    expect(codes(issuesOf(many))).toEqual(['steps too_many_steps'])
    expect(parseWorkflow(many, { limits: TRUSTED_WORKFLOW_LIMITS }).ok).toBe(true)
    const ids = Array.from({ length: 33 }, (_, index) => `s${index}`)
    const wide = `name: wide\nsteps:\n${ids.map((id) => `  - { id: ${id}, run: "true" }`).join('\n')}\n  - { id: join, run: "true", depends_on: [${ids.join(', ')}] }\n`
    expect(codes(issuesOf(wide))).toEqual(['steps[33].depends_on too_many_dependencies'])
    expect(
      codes(issuesOf(`name: long\nsteps: [{ id: a, prompt: "${'p'.repeat(16 * 1024 + 1)}" }]\n`)),
    ).toEqual(['steps[0].prompt invalid_value'])
    const deep = `name: deep\nsteps: [{ id: a, run: "true" }]\nx: ${'['.repeat(70)}${']'.repeat(70)}\n`
    expect(codes(issuesOf(deep))).toEqual([' too_deep'])
    const abyss = `name: deep\nx: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`
    expect(issuesOf(abyss, { limits: { maxSourceBytes: 1_000_000 } })[0]?.code).toMatch(
      /too_deep|yaml_syntax/,
    )
  })

  it('ignores unknown tags as plain strings and rejects non-string input', () => {
    expect(parseWorkflow('name: t\nsteps: [{ id: a, run: !!js/function "true" }]\n').ok).toBe(true)
    expect(codes(issuesOf(42 as unknown as string))).toEqual([' invalid_type'])
  })
})
