// TEMPORARY: replaced by guard/locate-tokens.ts
export interface RefTokenLocation {
  start: number
  end: number
  text: string
  kind: 'secret' | 'decrypt'
  name: string
  context:
    | 'unquoted'
    | 'double-quoted'
    | 'single-quoted'
    | 'ansi-c'
    | 'quoted-heredoc'
    | 'heredoc'
    | 'comment'
}
export function locateRefTokens(command: string): RefTokenLocation[] {
  const out: RefTokenLocation[] = []
  let state: 'none' | 'single' | 'double' | 'ansi' = 'none'
  for (let i = 0; i < command.length; i++) {
    const c = command[i]
    if (command.startsWith('{{', i)) {
      const m = /^\{\{(secret|decrypt):([^}]+)\}\}/.exec(command.slice(i))
      if (m) {
        out.push({
          start: i,
          end: i + m[0].length,
          text: m[0],
          kind: m[1] as 'secret',
          name: m[2] as string,
          context:
            state === 'none'
              ? 'unquoted'
              : state === 'single'
                ? 'single-quoted'
                : state === 'double'
                  ? 'double-quoted'
                  : 'ansi-c',
        })
        i += m[0].length - 1
        continue
      }
    }
    if (state === 'none') {
      if (c === '\\') i++
      else if (c === "'") state = command[i - 1] === '$' ? 'ansi' : 'single'
      else if (c === '"') state = 'double'
    } else if (state === 'single' || state === 'ansi') {
      if (c === "'") state = 'none'
      else if (state === 'ansi' && c === '\\') i++
    } else if (state === 'double') {
      if (c === '\\') i++
      else if (c === '"') state = 'none'
    }
  }
  return out
}
export function blockLangoExec(): string {
  return ''
}
export function classifyLangoExec(): unknown {
  return {}
}
export type LangoExecVerdict = unknown
