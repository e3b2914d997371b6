import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { waitFor } from '@lango/vitest-config/wait-for'
import type { Logger } from '../ports.js'

/** A fresh temporary directory, removed by the returned cleanup. */
export async function tempDir(
  prefix = 'lango-exec-',
): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix))
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) }
}

/** True while a process with this pid exists and is not a zombie. */
export async function isAlive(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    // Field 3 is the state; Z (zombie) and X (dead) count as gone.
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
    return state !== 'Z' && state !== 'X'
  } catch {
    return false
  }
}

/** Polls until none of `pids` is alive (15 s at most); rejects when one still is. */
export async function allGone(pids: readonly number[]): Promise<boolean> {
  return waitFor(async () => !(await Promise.all(pids.map(isAlive))).some(Boolean), {
    intervalMs: 25,
    what: `processes ${pids.join(', ')} to be gone`,
  })
}

/** SIGKILLs every pid still there: what a failing test left behind must not outlive it. */
export function killAll(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {}
  }
}

/** Reads pids written one per line by a fixture command. */
export async function readPids(file: string): Promise<number[]> {
  const text = await readFile(file, 'utf8').catch(() => '')
  return text.split(/\s+/).filter(Boolean).map(Number)
}

/**
 * A shell command that forks a tree (child → grandchild) of long sleeps, records every pid in
 * `pidFile`, then sleeps itself. Killing only the direct child would leave the rest running.
 */
export function forkTreeCommand(pidFile: string): string {
  return [
    `(sleep 300 & echo $! >> ${pidFile}; (sleep 300 & echo $! >> ${pidFile}; wait) & echo $! >> ${pidFile}; wait) &`,
    `echo $! >> ${pidFile}`,
    `echo $$ >> ${pidFile}`,
    `echo started`,
    `sleep 300`,
  ].join('\n')
}

/** A logger of the ADR 0006 shape that records every line as `[level, message, fields]`. */
export function recordingLogger(): Logger & { readonly lines: Array<[string, string, unknown]> } {
  const lines: Array<[string, string, unknown]> = []
  const at = (level: string) => (message: string, fields?: Readonly<Record<string, unknown>>) =>
    void lines.push([level, message, fields])
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}
