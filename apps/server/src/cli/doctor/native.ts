import { type CheckResult, safeMessage } from './check.js'

const PTY_TIMEOUT_MS = 5000

/** better-sqlite3 loads in this Node (the native module the database needs). */
export async function checkBetterSqlite(): Promise<CheckResult> {
  try {
    const { default: Database } = await import('better-sqlite3')
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

/** node-pty loads and spawns a terminal (the native module `exec` with `pty: true` needs). */
export async function checkPty(): Promise<CheckResult> {
  const fix = 'rebuild it for this Node (`pnpm rebuild node-pty`); until then exec with pty: true fails'
  try {
    const pty = await import('node-pty')
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
    return { name: 'node-pty', status: 'fail', message: `does not load: ${safeMessage(error)}`, fix }
  }
}
