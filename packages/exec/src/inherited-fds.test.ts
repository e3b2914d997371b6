/**
 * A descriptor the host inherited open (a parent's pipe at a high number, past the first gap after
 * 0–15 where Node stops marking descriptors close-on-exec) reaches every command the host runs,
 * PTY ones too, unless the host closes it at start with `closeInheritedDescriptors`. Real child
 * processes through the built package; Linux (`/proc`).
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const HOST = fileURLToPath(new URL('./__fixtures__/inherited-fd-host.mjs', import.meta.url))
/** The leaked descriptor's number in the host: past 0–15 and a gap. */
const LEAKED = 40

interface HostOutput {
  readonly closed: readonly number[]
  readonly plain: string
  readonly pty: string
}

async function host(mode: 'close' | 'keep'): Promise<HostOutput> {
  const stdio: ('pipe' | 'ignore' | 'inherit')[] = ['ignore', 'pipe', 'inherit']
  while (stdio.length < LEAKED) stdio.push('ignore')
  stdio.push('pipe')
  const child = spawn(process.execPath, [HOST, mode], { stdio })
  let output = ''
  child.stdout?.on('data', (chunk) => {
    output += chunk
  })
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  expect(code).toBe(0)
  return JSON.parse(output) as HostOutput
}

/** Whether `ls -l /proc/$$/fd` output lists descriptor `fd`. */
const lists = (listing: string, fd: number) => new RegExp(`\\s${fd} -> `).test(listing)

describe.skipIf(!existsSync('/proc/self/fdinfo'))('closeInheritedDescriptors', () => {
  it('an inherited descriptor reaches plain and PTY commands unless the host closed it at start', async () => {
    const kept = await host('keep')
    expect(lists(kept.plain, LEAKED)).toBe(true)
    expect(lists(kept.pty, LEAKED)).toBe(true)

    const closed = await host('close')
    expect(closed.closed).toContain(LEAKED)
    expect(lists(closed.plain, LEAKED)).toBe(false)
    expect(lists(closed.pty, LEAKED)).toBe(false)
    // The commands still ran, with their standard descriptors.
    expect(lists(closed.plain, 1)).toBe(true)
  }, 30_000)
})
