import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { locateRefTokens, type RefTokenContext, type RefTokenLocation, rewriteRefTokens } from './index.js'

const contexts = (command: string): RefTokenContext[] =>
  locateRefTokens(command).map((location) => location.context)

describe('locateRefTokens', () => {
  it('returns nothing for a command without tokens', () => {
    expect(locateRefTokens('echo hello')).toEqual([])
    expect(locateRefTokens('echo {{secret:}} {secret:x} {{other:x}}')).toEqual([])
  })

  it('reports offsets, text, kind and name', () => {
    const command = 'curl -H "Auth: {{secret:api-key}}" https://x/{{decrypt:uuid-123}}'
    const locations = locateRefTokens(command)
    expect(locations).toEqual<RefTokenLocation[]>([
      {
        start: command.indexOf('{{secret'),
        end: command.indexOf('{{secret') + '{{secret:api-key}}'.length,
        text: '{{secret:api-key}}',
        kind: 'secret',
        name: 'api-key',
        context: 'double-quoted',
      },
      {
        start: command.indexOf('{{decrypt'),
        end: command.length,
        text: '{{decrypt:uuid-123}}',
        kind: 'decrypt',
        name: 'uuid-123',
        context: 'unquoted',
      },
    ])
    for (const location of locations) expect(command.slice(location.start, location.end)).toBe(location.text)
  })

  it.each<[string, RefTokenContext[]]>([
    ['echo {{secret:k}}', ['unquoted']],
    ['echo Auth:{{secret:k}}', ['unquoted']],
    ['A={{secret:k}} cmd', ['unquoted']],
    ['env A={{secret:k}} cmd', ['unquoted']],
    ['arr=({{secret:k}})', ['unquoted']],
    ['curl -H "Auth: {{secret:k}}"', ['double-quoted']],
    ['echo "{{secret:a}}" {{secret:b}}', ['double-quoted', 'unquoted']],
    ['echo "a"{{secret:k}}"b"', ['unquoted']],
    ["echo '{{secret:k}}'", ['single-quoted']],
    ["echo 'x {{secret:k}} y'", ['single-quoted']],
    ["echo $'{{secret:k}}'", ['ansi-c']],
    ['echo $"{{secret:k}}"', ['double-quoted']],
    ['echo $(echo {{secret:k}})', ['unquoted']],
    ['echo "$(echo {{secret:k}})"', ['unquoted']],
    ['echo "$(echo "{{secret:k}}")"', ['double-quoted']],
    ['echo "$(echo \'{{secret:k}}\')"', ['single-quoted']],
    ['echo `echo {{secret:k}}`', ['unquoted']],
    ['echo "`echo {{secret:k}}`"', ['unquoted']],
    ['echo `echo \\`echo {{secret:k}}\\``', ['unquoted']],
    ['diff <(echo {{secret:k}}) x', ['unquoted']],
    ['echo ${X:-{{secret:k}}}', ['unquoted']],
    ['echo "${X:-{{secret:k}}}"', ['double-quoted']],
    ['echo $(( {{secret:k}} ))', ['unquoted']],
    ['[[ {{secret:k}} == x ]]', ['unquoted']],
    ['case {{secret:k}} in x) ;; esac', ['unquoted']],
    ['cat <<< {{secret:k}}', ['unquoted']],
    ['cat <<< "{{secret:k}}"', ['double-quoted']],
    ['cat <<EOF\n{{secret:k}}\nEOF', ['heredoc']],
    ['cat <<-EOF\n\t{{secret:k}}\n\tEOF', ['heredoc']],
    ["cat <<'EOF'\n{{secret:k}}\nEOF", ['quoted-heredoc']],
    ['cat <<"EOF"\n{{secret:k}}\nEOF', ['quoted-heredoc']],
    ['cat <<\\EOF\n{{secret:k}}\nEOF', ['quoted-heredoc']],
    ['cat <<EOF\n$(echo {{secret:k}})\nEOF', ['unquoted']],
    ["cat <<EOF <<'E2'\n{{secret:a}}\nEOF\n{{secret:b}}\nE2", ['heredoc', 'quoted-heredoc']],
    ['cat <<EOF # {{secret:a}}\nx\nEOF', ['comment']],
    ['echo hi # {{secret:k}}', ['comment']],
    ['# {{secret:k}}', ['comment']],
    ['echo a#{{secret:k}}', ['unquoted']],
    ['echo "#" {{secret:k}}', ['unquoted']],
    ['echo hi\n# {{secret:a}}\necho {{secret:b}}', ['comment', 'unquoted']],
    ["echo {{secret:'k'}}", ['single-quoted']],
    ['echo {{decrypt:id-1}} "{{decrypt:id-2}}"', ['unquoted', 'double-quoted']],
  ])('%j → %j', (command, expected) => {
    expect(contexts(command)).toEqual(expected)
  })

  it('finds tokens the parser cannot place (unterminated quotes) without throwing', () => {
    expect(contexts('echo "{{secret:k}}')).toEqual(['double-quoted'])
    expect(contexts("echo '{{secret:k}}")).toEqual(['single-quoted'])
  })

  it('places every token of a large command', () => {
    // Its speed is the bench's business (a timed assertion fails on a loaded machine).
    const command = 'echo "{{secret:a}}" {{secret:b}} \'{{secret:c}}\'; '.repeat(1_000)
    const found = contexts(command)
    expect(found).toHaveLength(3_000)
    expect(found.slice(0, 3)).toEqual(['double-quoted', 'unquoted', 'single-quoted'])
  })
})

describe('rewriteRefTokens', () => {
  const names = (mapping: Record<string, string>) => (location: RefTokenLocation) => mapping[location.text]

  it('wraps unquoted tokens in double quotes and leaves double-quoted ones bare', () => {
    const result = rewriteRefTokens(
      'curl -H "Auth: {{secret:k}}" -d token={{secret:k}} https://x',
      names({ '{{secret:k}}': 'LANGO_REF_0' }),
    )
    expect(result.command).toBe('curl -H "Auth: ${LANGO_REF_0}" -d token="${LANGO_REF_0}" https://x')
    expect(result.replaced.map((location) => location.context)).toEqual(['double-quoted', 'unquoted'])
    expect(result.unresolvedInQuotes).toEqual([])
  })

  it('uses bare references in unquoted here-documents and keeps comments unchanged', () => {
    const command = 'cat <<EOF # {{secret:k}}\nkey={{secret:k}}\nEOF'
    const result = rewriteRefTokens(command, names({ '{{secret:k}}': 'V' }))
    expect(result.command).toBe('cat <<EOF # {{secret:k}}\nkey=${V}\nEOF')
    expect(result.replaced).toHaveLength(1)
  })

  it.each([
    "echo '{{secret:k}}'",
    "echo $'{{secret:k}}'",
    "cat <<'EOF'\n{{secret:k}}\nEOF",
    "echo {{secret:'k'}}",
  ])('reports tokens the shell would not expand: %j', (command) => {
    const result = rewriteRefTokens(command, () => 'V')
    expect(result.command).toBe(command)
    expect(result.replaced).toEqual([])
    expect(result.unresolvedInQuotes).toHaveLength(1)
  })

  it('leaves tokens literal when nameFor returns undefined', () => {
    const command = 'echo {{secret:unknown}} "{{secret:known}}" \'{{secret:unknown}}\''
    const result = rewriteRefTokens(command, names({ '{{secret:known}}': 'K' }))
    expect(result.command).toBe('echo {{secret:unknown}} "${K}" \'{{secret:unknown}}\'')
    expect(result.unresolvedInQuotes).toEqual([])
  })

  it('returns the command unchanged when there are no tokens', () => {
    expect(rewriteRefTokens('ls -la', () => 'V')).toEqual({
      command: 'ls -la',
      replaced: [],
      unresolvedInQuotes: [],
      reparsed: [],
    })
  })

  it('passes each location to nameFor and rewrites in order', () => {
    const seen: string[] = []
    const result = rewriteRefTokens('echo {{secret:a}} {{decrypt:b}} {{secret:a}}', (location) => {
      seen.push(`${location.kind}:${location.name}`)
      return `V${seen.length}`
    })
    expect(seen).toEqual(['secret:a', 'decrypt:b', 'secret:a'])
    expect(result.command).toBe('echo "${V1}" "${V2}" "${V3}"')
  })

  it('rejects a nameFor result that is not a variable name', () => {
    expect(() => rewriteRefTokens('echo {{secret:k}}', () => 'x; rm -rf /')).toThrow(TypeError)
    expect(() => rewriteRefTokens('echo {{secret:k}}', () => '1abc')).toThrow(TypeError)
  })
})

const hasBash = existsSync('/bin/bash') || existsSync('/usr/bin/bash')

/** The rewritten command must print the value exactly, and a hostile value must stay data. */
describe.skipIf(!hasBash)('rewriteRefTokens under bash', () => {
  const hostile = `a b  "c" 'd' $(touch /tmp/lango-pwned) \`id\` ; rm -rf / # \\ * ?`

  it.each([
    ['printf %s {{secret:k}}', hostile],
    ['printf %s "{{secret:k}}"', hostile],
    ['printf %s "[{{secret:k}}]"', `[${hostile}]`],
    ['printf %s x{{secret:k}}y', `x${hostile}y`],
    ['printf %s "$(printf %s {{secret:k}})"', hostile],
    ['printf %s "`printf %s {{secret:k}}`"', hostile],
    ['printf %s ${UNSET:-{{secret:k}}}', hostile],
    ['cat <<EOF\n{{secret:k}}\nEOF', `${hostile}\n`],
    ['cat <<< {{secret:k}}', `${hostile}\n`],
  ])('%j prints the value verbatim', (command, expected) => {
    const { command: rewritten, unresolvedInQuotes } = rewriteRefTokens(command, () => 'LANGO_REF_0')
    expect(unresolvedInQuotes).toEqual([])
    const result = spawnSync('bash', ['-c', rewritten], {
      env: { PATH: '/usr/bin:/bin', LANGO_REF_0: hostile },
      encoding: 'utf8',
    })
    expect(result.stdout).toBe(expected)
    expect(existsSync('/tmp/lango-pwned')).toBe(false)
  })
})

describe('rewriteRefTokens with literal replacements (secret files)', () => {
  it('splices an inert literal in any quoting context, but never across a quote boundary', () => {
    const command = 'cat \'{{secretfile:k}}\' "{{secretfile:k}}" {{secretfile:k}} "{{secretfile:k"}}'
    const result = rewriteRefTokens(command, () => ({ literal: '/tmp/lango-secret-x/1' }))
    expect(result.command).toBe(
      'cat \'/tmp/lango-secret-x/1\' "/tmp/lango-secret-x/1" /tmp/lango-secret-x/1 "{{secretfile:k"}}',
    )
    expect(result.unresolvedInQuotes.map((location) => location.text)).toEqual(['{{secretfile:k"}}'])
  })

  it('refuses a literal that is not inert', () => {
    expect(() => rewriteRefTokens('cat {{secretfile:k}}', () => ({ literal: '/tmp/a b' }))).toThrow(TypeError)
    expect(() => rewriteRefTokens('cat {{secretfile:k}}', () => ({ literal: '$(id)' }))).toThrow(TypeError)
  })
})
