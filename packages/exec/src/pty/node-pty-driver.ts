import { randomBytes } from 'node:crypto'
import { accessSync, closeSync, constants, openSync, statSync, write, writeSync } from 'node:fs'
import { createRequire } from 'node:module'
import { delimiter, resolve } from 'node:path'
import { ReadStream } from 'node:tty'
import { ExecError } from '../errors.js'
import type { PtyDriver, PtyProcess } from '../ports.js'

/** The part of node-pty's native binding (`pty.node`) this driver uses. */
interface NativePty {
  fork(
    file: string,
    args: readonly string[],
    env: readonly string[],
    cwd: string,
    cols: number,
    rows: number,
    uid: number,
    gid: number,
    utf8: boolean,
    helperPath: string,
    onExit: (code: number, signal: number) => void,
  ): { fd: number; pid: number; pty: string }
  resize(fd: number, cols: number, rows: number): void
}

let cachedNative: NativePty | undefined

function loadNative(): NativePty {
  if (cachedNative !== undefined) return cachedNative
  const require = createRequire(import.meta.url)
  try {
    const utils = require('node-pty/lib/utils') as { loadNativeModule(name: string): { module: NativePty } }
    cachedNative = utils.loadNativeModule('pty').module
    return cachedNative
  } catch (error) {
    throw new ExecError(
      'EXEC_PTY_UNAVAILABLE',
      'node-pty is not installed or its native module failed to load',
      {
        cause: error,
      },
    )
  }
}

/**
 * Why `file` cannot start in `cwd`, or undefined when it can, asked just before forking. node-pty's
 * child reports a failed `chdir` or `execvp` only as exit status 1 (after printing perror's line on
 * the terminal), which would pass for a command that ran and failed; the other spawners reject
 * with `EXEC_SPAWN_FAILED`, and so must this one. The program is looked up as `execvp` does: a name
 * with a `/` relative to `cwd`, any other along the child's `PATH` (glibc's `/bin:/usr/bin` when
 * it has none).
 */
function spawnProblem(
  file: string,
  cwd: string,
  env: Readonly<Record<string, string>>,
): { readonly code: string; readonly why: string } | undefined {
  try {
    if (!statSync(cwd).isDirectory())
      return { code: 'ENOTDIR', why: 'its working directory is not a directory' }
    accessSync(cwd, constants.X_OK)
  } catch (error) {
    return {
      code: (error as NodeJS.ErrnoException).code ?? 'ENOENT',
      why: 'its working directory is missing',
    }
  }
  const candidates = file.includes('/')
    ? [resolve(cwd, file)]
    : (env.PATH ?? '/bin:/usr/bin').split(delimiter).map((directory) => resolve(cwd, directory, file))
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue
      accessSync(candidate, constants.X_OK)
      return undefined
    } catch {
      // Not here (or not executable): execvp tries the next directory too.
    }
  }
  return { code: 'ENOENT', why: 'the program was not found or is not executable' }
}

/** Longest wait for the drain marker before the driver gives up and reports the exit anyway. */
const DRAIN_TIMEOUT_MS = 5_000

/**
 * A {@link PtyDriver} over node-pty's native binding that never loses the end of the output.
 *
 * node-pty's own `IPty` reports exit when the master side reads EIO, and on Linux that EIO can
 * arrive before the last kilobytes the child wrote have been delivered (node-pty issues #72 and
 * #726; measured here: the tail of a 20 MB write was lost in about half the runs). This driver
 * holds its own descriptor on the slave side, so the master never sees EIO while the child
 * runs. When the child exits, the driver writes a random marker to that slave descriptor: it
 * travels through the same queue as the child's output, so once the master reads it, everything
 * the child wrote has been delivered. Only then is the exit reported. See docs/decisions/0002.
 */
export function nodePtyDriver(): PtyDriver {
  const native = loadNative()
  // One unguessable prefix per driver, a counter per spawn: cheaper than random bytes each time.
  const markerPrefix = `\u001b_lango-drain-${randomBytes(16).toString('hex')}-`
  let spawnCount = 0
  return {
    spawn(file, args, options): PtyProcess {
      const env = Object.entries(options.env).map(([name, value]) => `${name}=${value}`)
      const dataListeners: Array<(data: string) => void> = []
      const exitListeners: Array<(event: { exitCode: number; signal: number | null }) => void> = []
      const emit = (data: string) => {
        if (data.length > 0) for (const listener of dataListeners) listener(data)
      }
      let exitEvent: { exitCode: number; signal: number | null } | undefined
      let finished = false
      let slave = -1
      let marker: string | undefined
      let pending = ''
      let drainTimer: NodeJS.Timeout | undefined
      let master: ReadStream | undefined
      let masterEnded = false

      const finish = () => {
        if (finished) return
        finished = true
        clearTimeout(drainTimer)
        emit(pending)
        pending = ''
        if (slave >= 0) closeSync(slave)
        slave = -1
        master?.destroy()
        const event = exitEvent ?? { exitCode: 1, signal: null }
        for (const listener of exitListeners.splice(0)) listener(event)
      }

      const startDrain = () => {
        if (slave < 0) return // no hold: the master reaches EOF/EIO by itself once drained
        spawnCount += 1
        marker = `${markerPrefix}${spawnCount}\u001b\\`
        drainTimer = setTimeout(finish, DRAIN_TIMEOUT_MS)
        // The slave is non-blocking: a write that fits goes out now, without a thread-pool round
        // trip; if the terminal's buffer is full, fall back to an asynchronous write.
        const bytes = Buffer.from(marker, 'utf8')
        let written = 0
        try {
          written = writeSync(slave, bytes)
        } catch {
          // EAGAIN: nothing went out; the asynchronous write below sends it all.
        }
        if (written < bytes.length)
          write(slave, bytes.subarray(written), (error) => {
            if (error !== null) finish()
          })
      }

      const problem = spawnProblem(file, options.cwd, options.env)
      if (problem !== undefined)
        throw new ExecError('EXEC_SPAWN_FAILED', `could not start ${file} on a PTY: ${problem.why}`, {
          data: { code: problem.code },
        })
      let term: { fd: number; pid: number; pty: string }
      try {
        term = native.fork(
          file,
          args,
          env,
          options.cwd,
          options.cols,
          options.rows,
          -1,
          -1,
          true,
          '',
          (code, signal) => {
            exitEvent = { exitCode: code, signal: signal === 0 ? null : signal }
            if (masterEnded) finish()
            else startDrain()
          },
        )
      } catch (error) {
        throw new ExecError('EXEC_SPAWN_FAILED', `could not start ${file} on a PTY`, { cause: error })
      }
      try {
        slave = openSync(term.pty, constants.O_RDWR | constants.O_NOCTTY | constants.O_NONBLOCK)
        // The child may have exited before we opened it; then the native callback found no hold.
        if (exitEvent !== undefined) startDrain()
      } catch {
        // The slave is already gone: the master drains to EOF/EIO by itself.
      }
      master = new ReadStream(term.fd)
      master.setEncoding('utf8')
      master.on('data', (data: string) => {
        if (finished) return
        if (marker === undefined) {
          emit(data)
          return
        }
        // Draining: everything before the marker is the child's; the marker ends the stream.
        pending += data
        const at = pending.indexOf(marker)
        if (at >= 0) {
          pending = pending.slice(0, at)
          finish()
          return
        }
        const keep = marker.length - 1
        if (pending.length > keep) {
          emit(pending.slice(0, pending.length - keep))
          pending = pending.slice(pending.length - keep)
        }
      })
      const onEnd = () => {
        // EOF/EIO: nothing more can come. Report once the exit status is known too.
        masterEnded = true
        if (exitEvent !== undefined) finish()
      }
      master.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EAGAIN') onEnd()
      })
      master.on('end', onEnd)
      return {
        pid: term.pid,
        onData: (listener) => void dataListeners.push(listener),
        onExit: (listener) => void exitListeners.push(listener),
        write(data) {
          if (finished) return
          const buffer = Buffer.from(data, 'utf8')
          let offset = 0
          for (let attempts = 0; offset < buffer.length; attempts++) {
            try {
              offset += writeSync(term.fd, buffer, offset)
            } catch (error) {
              if ((error as NodeJS.ErrnoException).code !== 'EAGAIN' || attempts > 10_000) throw error
            }
          }
        },
        resize(cols, rows) {
          if (!finished) native.resize(term.fd, cols, rows)
        },
      }
    },
  }
}
