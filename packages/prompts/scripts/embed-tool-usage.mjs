// Writes src/tool-usage-text.ts from TOOL_USAGE.md, so the text ships inside the module and a
// bundled host never reads the file from disk. Runs before every build; a test keeps both equal.
import { readFileSync, writeFileSync } from 'node:fs'

const text = readFileSync(new URL('../TOOL_USAGE.md', import.meta.url), 'utf8')
const source = `// Generated from TOOL_USAGE.md by scripts/embed-tool-usage.mjs; edit the .md file, not this one.
export const TOOL_USAGE_TEXT: string = ${JSON.stringify(text)}
`
const target = new URL('../src/tool-usage-text.ts', import.meta.url)
let current = ''
try {
  current = readFileSync(target, 'utf8')
} catch {}
if (current !== source) writeFileSync(target, source)
