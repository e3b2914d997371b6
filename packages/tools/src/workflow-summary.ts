/** A shell (`run`) step of a workflow, as an approver is shown it. */
export interface ShellStepText {
  /** The step id, when known. */
  readonly id?: string
  /** The command as written: templates and secret references unresolved. */
  readonly command: string
}

/** How many commands an approval line shows, and how much of each. */
const SHOWN_COMMANDS = 3
const COMMAND_CHARACTERS = 100

const KEY_LINE = /^(\s*)(?:-\s+)?(["']?)(run|id)\2\s*:(?:\s+|$)(.*)$/
const ITEM_START = /^(\s*)-\s/
const BLOCK_INDICATOR = /^[|>][-+0-9]*\s*(?:#.*)?$/
const FLOW_ID = /[{,]\s*(["']?)id\1\s*:\s*("[^"]*"|'[^']*'|[^,}]*)/
const FLOW_RUN = /[{,]\s*(["']?)run\1\s*:\s*("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^,}]*)/g

function unquote(value: string): string {
  const text = value.trim()
  if (text.startsWith('"')) {
    try {
      return JSON.parse(text.endsWith('"') ? text : `${text}"`) as string
    } catch {
      return text.slice(1, text.endsWith('"') ? -1 : undefined)
    }
  }
  if (text.startsWith("'")) return text.slice(1, text.endsWith("'") ? -1 : undefined).replaceAll("''", "'")
  return text.replace(/\s+#.*$/, '')
}

/** A `|` (literal) or `>` (folded) block scalar's text, with its chomping (`-` strip, `+` keep). */
function blockScalar(indicator: string, raw: readonly string[]): string {
  const first = raw.find((line) => line.trim() !== '')
  const indent = first === undefined ? 0 : (/^\s*/.exec(first)?.[0].length ?? 0)
  const lines = raw.map((line) => (line.trim() === '' ? '' : line.slice(indent)))
  let end = lines.length
  while (end > 0 && lines[end - 1] === '') end--
  const body = lines.slice(0, end)
  let text = indicator.startsWith('>')
    ? body.reduce((folded, line, at) => {
        if (line === '') return `${folded}\n`
        return at === 0 || body[at - 1] === '' ? `${folded}${line}` : `${folded} ${line}`
      }, '')
    : body.join('\n')
  if (indicator.includes('+')) text += '\n'.repeat(lines.length - end + 1)
  else if (!indicator.includes('-') && body.length > 0) text += '\n'
  return text
}

/**
 * The `run` commands of a workflow's YAML text, in file order, for an approval line. It reads the
 * block and flow forms the workflow format uses (plain, quoted and `|`/`>` block scalars); what it
 * cannot decode it shows as written, so a command is never hidden from the approver.
 */
export function shellStepsOfYaml(yaml: string): ShellStepText[] {
  const lines = yaml.split(/\r?\n/)
  const steps: Array<{ id?: string; command: string }> = []
  // The list item being read (a step), and the column of its dash.
  let item: { id?: string; command?: string } = {}
  let itemColumn = Number.POSITIVE_INFINITY
  const flush = () => {
    if (item.command === undefined) return
    steps.push({ ...(item.id === undefined ? {} : { id: item.id }), command: item.command })
    item = { ...(item.id === undefined ? {} : { id: item.id }) }
  }
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] as string
    const dash = ITEM_START.exec(line)
    if (dash !== null && (dash[1] ?? '').length <= itemColumn) {
      flush()
      item = {}
      itemColumn = (dash[1] ?? '').length
    }
    for (const match of line.includes('{') ? line.matchAll(FLOW_RUN) : []) {
      const id = FLOW_ID.exec(line)?.[2]
      steps.push({ ...(id === undefined ? {} : { id: unquote(id) }), command: unquote(match[2] ?? '') })
    }
    const key = KEY_LINE.exec(line)
    if (key === null) continue
    const value = (key[4] ?? '').trim()
    if (key[3] === 'id') {
      item.id = unquote(value)
      continue
    }
    // The value goes on over every following line indented deeper than the key (a block scalar,
    // or a plain or quoted scalar folded over several lines).
    const column = /^\s*(?:-\s+)?/.exec(line)?.[0].length ?? 0
    const more: string[] = []
    while (index + 1 < lines.length) {
      const next = lines[index + 1] as string
      if (next.trim() !== '' && (/^\s*/.exec(next)?.[0].length ?? 0) <= column) break
      more.push(next)
      index++
    }
    flush()
    item.command = BLOCK_INDICATOR.test(value)
      ? blockScalar(value, more)
      : unquote([value, ...more.map((part) => part.trim())].filter((part) => part !== '').join(' '))
  }
  flush()
  return steps
}

function oneLine(command: string): string {
  const text = command
    .trim()
    .replace(/[ \t]+/g, ' ')
    .replace(/\s*\n\s*/g, ' ↵ ')
  return text.length > COMMAND_CHARACTERS ? `${text.slice(0, COMMAND_CHARACTERS)}…` : text
}

/** ` — shell steps: [id] command; …; and N more`, or `''` when there are none. */
export function describeShellSteps(steps: readonly ShellStepText[]): string {
  if (steps.length === 0) return ''
  const shown = steps
    .slice(0, SHOWN_COMMANDS)
    .map((step) => `${step.id === undefined ? '' : `[${step.id}] `}${oneLine(step.command)}`)
  const more = steps.length > SHOWN_COMMANDS ? `; and ${steps.length - SHOWN_COMMANDS} more` : ''
  return ` — shell steps: ${shown.join('; ')}${more}`
}
