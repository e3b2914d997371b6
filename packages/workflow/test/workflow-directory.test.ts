import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { WorkflowError } from '../src/errors.js'
import { TRUSTED_WORKFLOW_LIMITS } from '../src/limits.js'
import { checkWorkflowName, WorkflowDirectory } from '../src/workflow-directory.js'

const VALID = 'name: report\nsteps:\n  - { id: a, run: "echo hi" }\n'
const SECRET = 'TOPSECRET-canary-5f1e'

let base: string
let directory: WorkflowDirectory

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'lango-workflow-dir-'))
  directory = await WorkflowDirectory.open(join(base, 'workflows'))
})
afterEach(async () => {
  await rm(base, { recursive: true, force: true })
})

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error === undefined || WorkflowError.is(error), String(error)).toBe(true)
  if (error !== undefined) expect(JSON.stringify((error as WorkflowError).toJSON())).not.toContain(SECRET)
  return (error as WorkflowError | undefined)?.code
}

async function files(): Promise<string[]> {
  return (await readdir(directory.path)).sort()
}

describe('WorkflowDirectory.save', () => {
  it('writes <name>.flow.yaml with mode 0600 and reads it back', async () => {
    const saved = await directory.save('daily-report', VALID)
    expect(saved.filePath).toBe(join(directory.path, 'daily-report.flow.yaml'))
    expect(await readFile(saved.filePath, 'utf8')).toBe(VALID)
    expect((await stat(saved.filePath)).mode & 0o777).toBe(0o600)
    expect((await stat(directory.path)).mode & 0o777).toBe(0o700)
    expect(await directory.list()).toEqual(['daily-report'])
    const read = await directory.read('daily-report')
    expect(read).toMatchObject({ name: 'daily-report', filePath: saved.filePath })
    expect(read.workflow.definition.name).toBe('report')
  })

  it('replaces an existing file only with overwrite: true', async () => {
    await directory.save('x', VALID)
    expect(await codeOf(directory.save('x', VALID.replace('echo hi', 'echo bye')))).toBe(
      'WORKFLOW_FILE_EXISTS',
    )
    expect(await readFile(join(directory.path, 'x.flow.yaml'), 'utf8')).toBe(VALID)
    await directory.save('x', VALID.replace('echo hi', 'echo bye'), { overwrite: true })
    expect(await readFile(join(directory.path, 'x.flow.yaml'), 'utf8')).toContain('echo bye')
    expect(await files()).toEqual(['x.flow.yaml'])
  })

  it('refuses path traversal, absolute paths and reserved names, writing nothing', async () => {
    for (const name of [
      '../x',
      '../../etc/cron.d/x',
      'a/b',
      'a\\b',
      '/etc/passwd',
      'CON',
      'nul',
      'Com1',
      'lpt9',
      'x.',
      'x ',
      '.hidden',
      '-rf',
      '',
      'a'.repeat(65),
      'x\0y',
      'ünï',
    ]) {
      expect(await codeOf(directory.save(name, VALID)), JSON.stringify(name)).toBe('WORKFLOW_INVALID_NAME')
      expect(checkWorkflowName(name)).toBeDefined()
    }
    expect(await files()).toEqual([])
    expect(await readdir(base)).toEqual(['workflows'])
  })

  it('validates before writing: malformed YAML, unknown keys, cycles, oversized input and alias bombs write nothing', async () => {
    const bad = [
      `name: x\nsteps: [\n  token: "${SECRET}`,
      `name: x\nsurprise: ${SECRET}\nsteps: [{ id: a, run: "true" }]\n`,
      'name: x\nsteps:\n  - { id: a, run: "true", depends_on: [b] }\n  - { id: b, run: "true", depends_on: [a] }\n',
      'name: x\nsteps:\n  - { id: a, run: "true", depends_on: [ghost] }\n  - { id: a, run: "true" }\n',
      `name: x\ndescription: "${'x'.repeat(300 * 1024)}"\nsteps: [{ id: a, run: "true" }]\n`,
      'a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\nname: x\nsteps: [{ id: a, run: "true" }]\n',
    ]
    for (const source of bad) expect(await codeOf(directory.save('bad', source))).toBe('WORKFLOW_INVALID')
    expect(await files()).toEqual([])
  })

  it('replaces a pre-planted symlink instead of following it', async () => {
    const outside = join(base, 'outside.txt')
    await writeFile(outside, 'precious')
    await symlink(outside, join(directory.path, 'trap.flow.yaml'))
    expect(await codeOf(directory.save('trap', VALID))).toBe('WORKFLOW_FILE_EXISTS')
    await directory.save('trap', VALID, { overwrite: true })
    expect(await readFile(outside, 'utf8')).toBe('precious')
    expect((await stat(join(directory.path, 'trap.flow.yaml'))).isFile()).toBe(true)
  })
})

describe('WorkflowDirectory.read', () => {
  it('refuses files outside the directory, symlinks out of it, and non-.flow.yaml files', async () => {
    await writeFile(join(base, 'secret.flow.yaml'), `name: x\nsteps: [{ id: a, run: "echo ${SECRET}" }]\n`)
    await symlink(join(base, 'secret.flow.yaml'), join(directory.path, 'link.flow.yaml'))
    await writeFile(join(directory.path, 'notes.txt'), SECRET)
    await symlink(join(directory.path, 'notes.txt'), join(directory.path, 'notes.flow.yaml'))
    await mkdir(join(base, 'workflows-evil'))
    await writeFile(join(base, 'workflows-evil', 'x.flow.yaml'), VALID)
    const cases: Array<[string, string]> = [
      ['/etc/passwd', 'WORKFLOW_PATH_NOT_ALLOWED'],
      ['~/.ssh/id_ed25519', 'WORKFLOW_PATH_NOT_ALLOWED'],
      [join(base, 'secret.flow.yaml'), 'WORKFLOW_PATH_NOT_ALLOWED'],
      ['../secret.flow.yaml', 'WORKFLOW_PATH_NOT_ALLOWED'],
      ['link', 'WORKFLOW_PATH_NOT_ALLOWED'],
      ['link.flow.yaml', 'WORKFLOW_PATH_NOT_ALLOWED'],
      ['notes.flow.yaml', 'WORKFLOW_PATH_NOT_ALLOWED'],
      ['notes.txt', 'WORKFLOW_PATH_NOT_ALLOWED'],
      [join(base, 'workflows-evil', 'x.flow.yaml'), 'WORKFLOW_PATH_NOT_ALLOWED'],
      ['missing', 'WORKFLOW_FILE_NOT_FOUND'],
      ['nested/missing.flow.yaml', 'WORKFLOW_FILE_NOT_FOUND'],
      ['bad\0name.flow.yaml', 'WORKFLOW_PATH_NOT_ALLOWED'],
    ]
    for (const [path, code] of cases) expect(await codeOf(directory.read(path)), path).toBe(code)
  })

  it('answers a path outside the same whether or not its file exists (issue 21)', async () => {
    await writeFile(join(base, 'present.flow.yaml'), VALID)
    await mkdir(join(base, 'private'), { mode: 0o000 })
    const answers = await Promise.all(
      [
        join(base, 'present.flow.yaml'),
        join(base, 'absent.flow.yaml'),
        '../present.flow.yaml',
        '../absent.flow.yaml',
        join(base, 'private', 'x.flow.yaml'),
        '/no-such-directory/x.flow.yaml',
      ].map((path) =>
        directory.read(path).then(
          () => undefined,
          (error: WorkflowError) => ({ code: error.code, message: error.message }),
        ),
      ),
    )
    for (const answer of answers)
      expect(answer).toEqual({
        code: 'WORKFLOW_PATH_NOT_ALLOWED',
        message: 'Workflow files must lie inside the workflows directory or the workspace',
      })
  })

  it('accepts a path inside the directory (also nested) and inside an allowed workspace root', async () => {
    await mkdir(join(directory.path, 'team'))
    await writeFile(join(directory.path, 'team', 'nightly.flow.yaml'), VALID)
    expect((await directory.read('team/nightly.flow.yaml')).filePath).toBe(
      join(directory.path, 'team', 'nightly.flow.yaml'),
    )
    expect((await directory.read(join(directory.path, 'team', 'nightly.flow.yaml'))).name).toBeUndefined()
    const workspace = join(base, 'workspace')
    await mkdir(workspace)
    await writeFile(join(workspace, 'w.flow.yaml'), VALID)
    expect(await codeOf(directory.read(join(workspace, 'w.flow.yaml')))).toBe('WORKFLOW_PATH_NOT_ALLOWED')
    const withWorkspace = await WorkflowDirectory.open(directory.path, { allowedRoots: [workspace] })
    expect((await withWorkspace.read(join(workspace, 'w.flow.yaml'))).workflow.definition.name).toBe('report')
  })

  it('refuses oversized files, alias bombs, cycles and malformed YAML without quoting them', async () => {
    await writeFile(
      join(directory.path, 'big.flow.yaml'),
      `# ${SECRET}${'x'.repeat(300 * 1024)}\nname: big\nsteps: [{ id: a, run: "true" }]\n`,
    )
    await writeFile(
      join(directory.path, 'bomb.flow.yaml'),
      `a: &a ["${SECRET}","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\nname: x\nsteps: [{ id: a, run: "true" }]\n`,
    )
    await writeFile(
      join(directory.path, 'cycle.flow.yaml'),
      'name: c\nsteps:\n  - { id: a, run: "true", depends_on: [a] }\n',
    )
    await writeFile(join(directory.path, 'broken.flow.yaml'), `name: x\nkey: "${SECRET}\n  - [`)
    await writeFile(join(directory.path, 'binary.flow.yaml'), Buffer.from([0xff, 0xfe, 0x00, 0x41]))
    for (const name of ['big', 'bomb', 'cycle', 'broken', 'binary'])
      expect(await codeOf(directory.read(name)), name).toBe('WORKFLOW_INVALID')
    const big = await directory.read('big').catch((error: WorkflowError) => error)
    expect((big as WorkflowError).issues?.[0]?.code).toBe('source_too_large')
    // A trusted caller may raise the cap for its own files.
    expect((await directory.read('big', { limits: TRUSTED_WORKFLOW_LIMITS })).workflow.definition.name).toBe(
      'big',
    )
  })

  it('lists only regular saved files with valid names', async () => {
    await directory.save('b', VALID)
    await directory.save('a', VALID)
    await writeFile(join(directory.path, 'readme.md'), 'x')
    await writeFile(join(directory.path, 'bad name.flow.yaml'), VALID)
    await symlink(join(directory.path, 'a.flow.yaml'), join(directory.path, 'alias.flow.yaml'))
    expect(await directory.list()).toEqual(['a', 'b'])
  })
})

describe('WorkflowDirectory.open', () => {
  it('refuses a symlinked or group/world-writable directory', async () => {
    await symlink(directory.path, join(base, 'linked'))
    expect(await codeOf(WorkflowDirectory.open(join(base, 'linked')))).toBe('WORKFLOW_DIRECTORY_UNSAFE')
    const open = join(base, 'open')
    await mkdir(open)
    await chmod(open, 0o777)
    expect(await codeOf(WorkflowDirectory.open(open))).toBe('WORKFLOW_DIRECTORY_UNSAFE')
    await writeFile(join(base, 'file'), 'x')
    expect(await codeOf(WorkflowDirectory.open(join(base, 'file')))).toBe('WORKFLOW_DIRECTORY_UNSAFE')
  })
})
