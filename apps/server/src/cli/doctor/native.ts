import { createRequire } from 'node:module'
import { type CheckResult, safeMessage } from './check.js'

const PTY_TIMEOUT_MS = 5000

/** better-sqlite3 loads in this Node (the native module the database needs). */
export async function checkBetterSqlite(): Promise<CheckResult> {
  try {
    const { default: Database } = await import('@lango/better-sqlite3')
    const database = new Database(':memory:')
    const { version } = database.prepare('select sqlite_version() as version').get() as { version: string }
    database.close()
    return {
      name: 'better-sqlite3',
      status: 'ok',
      message: `loads (SQLite ${version}, Node ${process.versions.node})`,
    }
  } catch (error) {
    return {
      name: 'better-sqlite3',
      status: 'fail',
      message: `does not load: ${safeMessage(error)}`,
      fix: 'rebuild it for this Node (`pnpm rebuild better-sqlite3`); on Node 22+ it needs better-sqlite3 13.x',
    }
  }
}

/** How the node-pty check loads the module (a parameter so a test can stand in a missing one). */
export type LoadPty = () => Promise<typeof import('node-pty')>

/**
 * node-pty as `@lango/exec` loads it: resolved from where `@lango/exec` is installed, which need not
 * be where this CLI is (an outside probe's global install put them side by side, and the server's
 * own copy of node-pty was out of `@lango/exec`'s reach while this check found it).
 */
const ptyAsExecLoadsIt: LoadPty = async () =>
  createRequire(createRequire(import.meta.url).resolve('@lango/exec/pty'))(
    'node-pty',
  ) as typeof import('node-pty')

/** True when `error` says the module is not installed at all (npm skips an optional one it cannot build). */
function isModuleNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND'
}

/**
 * node-pty loads and spawns a terminal (the native module `exec` with `pty: true` needs). node-pty is
 * an optional dependency: when it is not installed (npm could not build it) or does not load, exec
 * still runs every command without a terminal, so that is a warning, not a failure.
 */
export async function checkPty(load: LoadPty = ptyAsExecLoadsIt): Promise<CheckResult> {
  const fix = 'rebuild it for this Node (`pnpm rebuild node-pty`); until then exec with pty: true fails'
  let pty: typeof import('node-pty')
  try {
    pty = await load()
  } catch (error) {
    if (isModuleNotFound(error))
      return {
        name: 'node-pty',
        status: 'warn',
        message: 'not installed (optional): exec runs commands without a terminal; exec with pty: true fails',
        fix: 'install the C++ build tools (python3, make, g++) and reinstall @lango/server so npm can build node-pty',
      }
    return {
      name: 'node-pty',
      status: 'warn',
      message: `does not load (optional): exec runs commands without a terminal; ${safeMessage(error)}`,
      fix,
    }
  }
  try {
    const child = pty.spawn('/bin/sh', ['-c', 'printf ok'], {
      cols: 20,
      rows: 2,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    })
    let output = ''
    child.onData((data) => {
      output += data
    })
    const exitCode = await new Promise<number | undefined>((resolve) => {
      const timer = setTimeout(() => {
        child.kill()
        resolve(undefined)
      }, PTY_TIMEOUT_MS)
      child.onExit(({ exitCode: code }) => {
        clearTimeout(timer)
        resolve(code)
      })
    })
    if (exitCode === 0 && output.includes('ok'))
      return { name: 'node-pty', status: 'ok', message: 'spawns a terminal' }
    return {
      name: 'node-pty',
      status: 'fail',
      message:
        exitCode === undefined
          ? 'a terminal did not start within 5 s'
          : `a terminal's shell exited ${exitCode}`,
      fix,
    }
  } catch (error) {
    return {
      name: 'node-pty',
      status: 'fail',
      message: `cannot spawn a terminal: ${safeMessage(error)}`,
      fix,
    }
  }
}
