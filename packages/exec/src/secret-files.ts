import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ExecError } from './errors.js'
import { onHostExit } from './host-cleanup.js'

/**
 * Private files behind `{{secretfile:NAME}}` / `{{decryptfile:ID}}`: one directory per spawn, mode
 * 0700, made with `mkdtemp` in the host's temporary directory (`TMPDIR`; point it at a tmpfs such
 * as `/dev/shm` or `$XDG_RUNTIME_DIR` to keep values off disk), one file per value, mode 0600,
 * created exclusively. The spawner removes the directory when the process ends (exit, kill,
 * timeout, failed start); directories still present when the host exits or is signalled
 * (`installSignalCleanup`) are removed then.
 */
const liveDirectories = new Set<string>()

/** On host exit: removes every secret directory still present. */
function removeEveryDirectory(): void {
  for (const live of liveDirectories) rmSync(live, { recursive: true, force: true })
  liveDirectories.clear()
}

/** Characters a path may hold so that it is inert wherever it is spliced into shell text. */
const INERT_PATH = /^[A-Za-z0-9/_.+-]+$/

/** The secret files of one spawn. */
export class SecretFiles {
  #directory: string | undefined
  #count = 0

  /** Writes `value` to a new private file and returns its path (letters, digits and `/_.+-` only). */
  write(value: string): string {
    if (this.#directory === undefined) {
      const directory = mkdtempSync(join(tmpdir(), 'lango-secret-'))
      if (!INERT_PATH.test(directory)) {
        rmSync(directory, { recursive: true, force: true })
        throw new ExecError(
          'EXEC_INVALID_OPTION',
          'secret files need a temporary directory whose path holds only letters, digits and / _ . + -: set TMPDIR',
        )
      }
      this.#directory = directory
      liveDirectories.add(directory)
      onHostExit(removeEveryDirectory)
    }
    this.#count += 1
    const path = join(this.#directory, `${this.#count}`)
    writeFileSync(path, value, { mode: 0o600, flag: 'wx' })
    return path
  }

  /** Removes every file of this spawn (idempotent). */
  remove(): void {
    const directory = this.#directory
    if (directory === undefined) return
    this.#directory = undefined
    liveDirectories.delete(directory)
    rmSync(directory, { recursive: true, force: true })
  }
}
