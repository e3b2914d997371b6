import { closeSync, constants, openSync, writeSync } from 'node:fs'
import { createRequire } from 'node:module'
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
 * A {@link PtyDriver} over node-pty's native binding that never loses the end of the output.
 *
 * node-pty's own `IPty` reports exit when the master side reads EIO, and on Linux that EIO can
 * arrive before the last kilobytes the child wrote have been delivered (node-pty issues #72 and
 * #726; measured here: the tail of a 20 MB write was lost in about half the runs). This driver
 * holds its own descriptor on the slave side, so the master never sees EIO while the child
 * runs; when the native exit callback fires, it releases that descriptor, and reports the exit
 * only after the master has read everything up to EOF/EIO. See docs/decisions/0002.
 */
export function nodePtyDriver(): PtyDriver {
  const native = loadNative()
  return {
    spawn(file, args, options): PtyProcess {
      const env = Object.entries(options.env).map(([name, value]) => `${name}=${value}`)
      const dataListeners: Array<(data: string) => void> = []
      const exitListeners: Array<(event: { exitCode: number; signal: number | null }) => void> = []
      let exitEvent: { exitCode: number; signal: number | null } | undefined
      let drained = false
      let slave = -1
      const report = () => {
        if (exitEvent === undefined || !drained) return
        const event = exitEvent
        exitEvent = undefined
        for (const listener of exitListeners.splice(0)) listener(event)
      }
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
            // The child is gone: drop our hold on the slave so the master reaches EOF once drained.
            setImmediate(() => {
              if (slave >= 0) closeSync(slave)
              slave = -1
              report()
            })
          },
        )
      } catch (error) {
        throw new ExecError('EXEC_SPAWN_FAILED', `could not start ${file} on a PTY`, { cause: error })
      }
      try {
        slave = openSync(term.pty, constants.O_RDWR | constants.O_NOCTTY)
      } catch {
        // The child already exited and the slave is gone: the master will drain as usual.
      }
      const master = new ReadStream(term.fd)
      master.setEncoding('utf8')
      master.on('data', (data: string) => {
        for (const listener of dataListeners) listener(data)
      })
      const onDrained = () => {
        if (drained) return
        drained = true
        master.destroy()
        report()
      }
      master.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'EAGAIN') return
        onDrained()
      })
      master.on('end', onDrained)
      master.on('close', onDrained)
      return {
        pid: term.pid,
        onData: (listener) => void dataListeners.push(listener),
        onExit: (listener) => void exitListeners.push(listener),
        write(data) {
          if (drained) return
          const buffer = Buffer.from(data, 'utf8')
          let offset = 0
          while (offset < buffer.length) {
            try {
              offset += writeSync(term.fd, buffer, offset)
            } catch (error) {
              if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error
            }
          }
        },
        resize(cols, rows) {
          if (!drained) native.resize(term.fd, cols, rows)
        },
      }
    },
  }
}
