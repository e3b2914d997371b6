import type { Output } from '../output.js'
import type { CheckResult } from './check.js'

/** The report as text: one line per check (its message's further lines and fix indented), then a total. */
export function renderChecks(out: Output, checks: readonly CheckResult[]): void {
  const width = Math.max(...checks.map((check) => check.name.length))
  for (const check of checks) {
    const style = check.status === 'ok' ? 'green' : check.status === 'warn' ? 'yellow' : 'red'
    const [first = '', ...rest] = check.message.split('\n')
    out.print(`${out.paint(style, check.status.padEnd(4))}  ${check.name.padEnd(width)}  ${first}`)
    for (const line of rest) out.print(`      ${' '.repeat(width)}  ${line}`)
    if (check.fix !== undefined)
      out.print(`      ${' '.repeat(width)}  ${out.paint('dim', `→ ${check.fix}`)}`)
  }
  const failed = checks.filter((check) => check.status === 'fail').length
  const warned = checks.filter((check) => check.status === 'warn').length
  out.print(
    failed > 0
      ? out.paint('red', `\n${failed} check${failed === 1 ? '' : 's'} failed`)
      : `\n${out.paint('green', 'no problems')}${warned > 0 ? ` (${warned} warning${warned === 1 ? '' : 's'})` : ''}`,
  )
}
