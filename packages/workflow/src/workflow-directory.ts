import { randomUUID } from 'node:crypto'
import { constants } from 'node:fs'
import {
  type FileHandle,
  link,
  lstat,
  mkdir,
  open,
  readdir,
  readlink,
  realpath,
  rename,
  stat,
  unlink,
} from 'node:fs/promises'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import type { LoadedWorkflow } from './definition.js'
import { invalidWorkflowError, WorkflowError } from './errors.js'
import { resolveLimits, type WorkflowLimits } from './limits.js'
import { refuseUnknownKeys } from './option-keys.js'
import { parseWorkflow } from './parse-workflow.js'

/** Save names: a letter or digit, then up to 63 of `[A-Za-z0-9_-]` (SECURITY.md WF-1). */
const WORKFLOW_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/
/** The file suffix of saved workflows. */
const WORKFLOW_FILE_SUFFIX = '.flow.yaml'
const DEVICE_NAME = /^(?:con|prn|aux|nul|com[1-9]|lpt[1-9])$/i
const OUTSIDE_ROOTS = 'Workflow files must lie inside the workflows directory or the workspace'

/** Options of {@link WorkflowDirectory.open}. */
export interface WorkflowDirectoryOptions {
  /** Create the directory (mode 0700) when missing. Default true. */
  readonly create?: boolean
  /** Other directories whose `*.flow.yaml` files `read()` accepts (the configured workspace). */
  readonly allowedRoots?: readonly string[]
  /** Caps for files read and saved; default {@link AGENT_WORKFLOW_LIMITS} (the agent supplies both). */
  readonly limits?: Partial<WorkflowLimits>
  readonly signal?: AbortSignal
}

const checkDirectoryKeys = refuseUnknownKeys('WorkflowDirectory.open options', [
  'create',
  'allowedRoots',
  'limits',
  'signal',
] satisfies readonly (keyof WorkflowDirectoryOptions)[])

/** A workflow read from or saved to disk. */
export interface WorkflowFile {
  /** The saved name, when the file sits in the workflows directory. */
  readonly name?: string
  /** The resolved absolute path (symlinks followed). */
  readonly filePath: string
  readonly workflow: LoadedWorkflow
}

/** Returns why `name` cannot be a save name, or `undefined` when it can. */
export function checkWorkflowName(name: unknown): string | undefined {
  if (typeof name !== 'string' || !WORKFLOW_NAME.test(name)) {
    return 'Workflow names are 1-64 characters of A-Z, a-z, 0-9, "_" and "-", starting with a letter or digit'
  }
  if (DEVICE_NAME.test(name))
    return 'Workflow names cannot be reserved device names (CON, PRN, AUX, NUL, COM1-9, LPT1-9)'
  return undefined
}

function isInside(root: string, target: string): boolean {
  const path = relative(root, target)
  return path !== '' && path !== '..' && !path.startsWith(`..${sep}`) && !isAbsolute(path)
}

/**
 * The workflows directory: saves `<name>.flow.yaml` safely and reads workflow files confined to it
 * (and to configured extra roots). Realpath-resolved once at open; refuses a symlinked or
 * group/world-writable directory (SECURITY.md WF-1..WF-5).
 * @example
 * const directory = await WorkflowDirectory.open(join(langoHome, 'workflows'))
 * await directory.save('daily-report', yamlText)
 * const { workflow } = await directory.read('daily-report')
 */
export class WorkflowDirectory {
  /** The directory's real path. */
  readonly path: string
  readonly #roots: readonly string[]
  /** The roots as given and as real paths: where a path may point before anything is resolved. */
  readonly #spelledRoots: readonly string[]
  readonly #limits: WorkflowLimits

  private constructor(
    path: string,
    roots: readonly string[],
    spelledRoots: readonly string[],
    limits: WorkflowLimits,
  ) {
    this.path = path
    this.#roots = roots
    this.#spelledRoots = spelledRoots
    this.#limits = limits
  }

  /** Opens (and by default creates) the workflows directory. Throws `WORKFLOW_DIRECTORY_UNSAFE` when it is not safe to use. */
  static async open(path: string, options: WorkflowDirectoryOptions = {}): Promise<WorkflowDirectory> {
    checkDirectoryKeys(options)
    options.signal?.throwIfAborted()
    const absolute = resolve(path)
    // A failure here (a file in the way, no permission) is reported by the checks below.
    if (options.create !== false) await mkdir(absolute, { recursive: true, mode: 0o700 }).catch(() => {})
    const unsafe = (why: string) =>
      new WorkflowError('WORKFLOW_DIRECTORY_UNSAFE', `The workflows directory ${why}`)
    let info: Awaited<ReturnType<typeof lstat>>
    try {
      info = await lstat(absolute)
    } catch {
      throw unsafe('does not exist')
    }
    if (info.isSymbolicLink()) throw unsafe('is a symlink')
    if (!info.isDirectory()) throw unsafe('is not a directory')
    if ((info.mode & 0o022) !== 0) throw unsafe('is writable by group or others (chmod 700 it)')
    const real = await realpath(absolute)
    const roots = [real]
    const spelled = [absolute, real]
    for (const root of options.allowedRoots ?? []) {
      try {
        const realRoot = await realpath(resolve(root))
        roots.push(realRoot)
        spelled.push(resolve(root), realRoot)
      } catch {
        // A missing workspace simply adds nothing.
      }
    }
    return new WorkflowDirectory(real, roots, [...new Set(spelled)], resolveLimits(options.limits))
  }

  /** The file path a saved name maps to. Throws `WORKFLOW_INVALID_NAME` for a bad name. */
  filePathFor(name: string): string {
    const problem = checkWorkflowName(name)
    if (problem !== undefined) throw new WorkflowError('WORKFLOW_INVALID_NAME', problem)
    const target = join(this.path, `${name}${WORKFLOW_FILE_SUFFIX}`)
    if (dirname(target) !== this.path)
      throw new WorkflowError('WORKFLOW_INVALID_NAME', 'The name does not map into the workflows directory')
    return target
  }

  /**
   * Validates `source` fully, then writes `<name>.flow.yaml` atomically: a temp file created with
   * `O_EXCL|O_NOFOLLOW`, mode 0600, fsynced, then renamed over the target (`overwrite: true`) or
   * hard-linked to it (fails if anything, even a dangling symlink, is there). An invalid workflow or
   * name writes nothing.
   */
  async save(
    name: string,
    source: string,
    options: { readonly overwrite?: boolean; readonly signal?: AbortSignal } = {},
  ): Promise<WorkflowFile & { readonly name: string }> {
    options.signal?.throwIfAborted()
    const target = this.filePathFor(name)
    const parsed = parseWorkflow(source, { limits: this.#limits })
    if (!parsed.ok) throw invalidWorkflowError(parsed.issues)
    const temp = join(this.path, `.${name}.${randomUUID()}.tmp`)
    let handle: FileHandle | undefined
    try {
      handle = await open(
        temp,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o600,
      )
      await handle.writeFile(source, 'utf8')
      await handle.sync()
      await handle.close()
      handle = undefined
      options.signal?.throwIfAborted()
      if (options.overwrite === true) {
        await rename(temp, target)
      } else {
        try {
          await link(temp, target)
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
            throw new WorkflowError(
              'WORKFLOW_FILE_EXISTS',
              'A saved workflow with this name exists; pass overwrite: true to replace it',
              {
                data: { name },
              },
            )
          }
          throw error
        }
      }
      await syncDirectory(this.path)
    } finally {
      await handle?.close().catch(() => {})
      await unlink(temp).catch(() => {})
    }
    return { name, filePath: target, workflow: parsed.workflow }
  }

  /**
   * Reads and validates a workflow by saved name or by path. A path is accepted only when it lies
   * inside the workflows directory or an allowed root as written (checked before the file system
   * is touched, so a path outside is `WORKFLOW_PATH_NOT_ALLOWED` whether or not its file exists)
   * and again once resolved (symlinks followed), and ends in `.flow.yaml`; the file is opened with `O_NOFOLLOW`, must be a regular file within the size cap,
   * and is re-checked through its open descriptor. Errors never quote the file.
   */
  async read(
    nameOrPath: string,
    options: { readonly signal?: AbortSignal; readonly limits?: Partial<WorkflowLimits> } = {},
  ): Promise<WorkflowFile> {
    options.signal?.throwIfAborted()
    const limits = options.limits === undefined ? this.#limits : resolveLimits(options.limits, this.#limits)
    const notAllowed = (why: string) => new WorkflowError('WORKFLOW_PATH_NOT_ALLOWED', why)
    if (
      typeof nameOrPath !== 'string' ||
      nameOrPath.length === 0 ||
      nameOrPath.includes('\0') ||
      nameOrPath.length > 4096
    ) {
      throw notAllowed('Give a saved workflow name or a .flow.yaml path inside the workflows directory')
    }
    const bareName = checkWorkflowName(nameOrPath) === undefined
    const candidate = bareName ? this.filePathFor(nameOrPath) : resolve(this.path, nameOrPath)
    if (!bareName && !candidate.endsWith(WORKFLOW_FILE_SUFFIX))
      throw notAllowed('Workflow files must end in .flow.yaml')
    // Before the file system is asked anything: a path outside every root is refused the same way
    // whether or not a file is there, so the answer says nothing about files outside.
    if (!bareName && !this.#spelledRoots.some((root) => isInside(root, candidate)))
      throw notAllowed(OUTSIDE_ROOTS)
    let real: string
    try {
      real = await realpath(candidate)
    } catch {
      throw new WorkflowError('WORKFLOW_FILE_NOT_FOUND', 'No such workflow file')
    }
    if (!real.endsWith(WORKFLOW_FILE_SUFFIX))
      throw notAllowed('Workflow files must end in .flow.yaml (after resolving symlinks)')
    if (!this.#roots.some((root) => isInside(root, real))) throw notAllowed(OUTSIDE_ROOTS)
    let handle: FileHandle
    try {
      handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW)
    } catch {
      throw notAllowed('The workflow file could not be opened safely')
    }
    let bytes: Buffer
    try {
      const info = await handle.stat()
      if (!info.isFile()) throw notAllowed('Workflow files must be regular files')
      await this.#recheck(handle, real, info)
      if (info.size > limits.maxSourceBytes) throw tooLarge(limits)
      // Read at most cap + 1 bytes: a file growing after fstat cannot make us read more.
      const buffer = Buffer.alloc(limits.maxSourceBytes + 1)
      let length = 0
      while (length < buffer.length) {
        const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length)
        if (bytesRead === 0) break
        length += bytesRead
      }
      if (length > limits.maxSourceBytes) throw tooLarge(limits)
      bytes = buffer.subarray(0, length)
    } finally {
      await handle.close()
    }
    let source: string
    try {
      source = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
    } catch {
      throw invalidWorkflowError([{ path: '', code: 'yaml_syntax', message: 'the file is not UTF-8 text' }])
    }
    const parsed = parseWorkflow(source, { limits })
    if (!parsed.ok) throw invalidWorkflowError(parsed.issues)
    const inDirectory = dirname(real) === this.path
    const base = real.slice(dirname(real).length + 1, -WORKFLOW_FILE_SUFFIX.length)
    return {
      ...(inDirectory && checkWorkflowName(base) === undefined ? { name: base } : {}),
      filePath: real,
      workflow: parsed.workflow,
    }
  }

  /** Names of the saved workflows (regular `*.flow.yaml` files with valid names), sorted. */
  async list(options: { readonly signal?: AbortSignal } = {}): Promise<string[]> {
    options.signal?.throwIfAborted()
    const entries = await readdir(this.path, { withFileTypes: true })
    return entries
      .filter((entry) => entry.isFile() && entry.name.endsWith(WORKFLOW_FILE_SUFFIX))
      .map((entry) => entry.name.slice(0, -WORKFLOW_FILE_SUFFIX.length))
      .filter((name) => checkWorkflowName(name) === undefined)
      .sort()
  }

  /** Guards against a directory on the path being swapped between realpath and open (TOCTOU). */
  async #recheck(handle: FileHandle, real: string, info: { dev: number; ino: number }): Promise<void> {
    let opened: string | undefined
    try {
      opened = await readlink(`/proc/self/fd/${handle.fd}`)
    } catch {
      opened = undefined
    }
    if (opened !== undefined) {
      if (!this.#roots.some((root) => isInside(root, opened as string))) {
        throw new WorkflowError(
          'WORKFLOW_PATH_NOT_ALLOWED',
          'The workflow file moved outside the allowed directories',
        )
      }
      return
    }
    const again = await stat(real)
    if (again.dev !== info.dev || again.ino !== info.ino) {
      throw new WorkflowError('WORKFLOW_PATH_NOT_ALLOWED', 'The workflow file changed while it was opened')
    }
  }
}

function tooLarge(limits: WorkflowLimits): WorkflowError {
  return invalidWorkflowError([
    {
      path: '',
      code: 'source_too_large',
      message: `the workflow is larger than ${limits.maxSourceBytes} bytes`,
    },
  ])
}

async function syncDirectory(path: string): Promise<void> {
  try {
    const handle = await open(path, constants.O_RDONLY)
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
  } catch {
    // Not every platform can fsync a directory; the rename is still atomic.
  }
}
