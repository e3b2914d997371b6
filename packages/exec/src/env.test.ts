import { describe, expect, it } from 'vitest'
import { ProcessRegistry } from './background.js'
import { cleanPath, createEnvBuilder, isCredentialEnv, isDeniedEnvName } from './env.js'
import { run } from './run.js'

/** Inherited variables that SECURITY.md §7 item 1 says no child may see. */
const POISON: Record<string, string> = {
  LD_PRELOAD: '/tmp/evil.so',
  DYLD_INSERT_LIBRARIES: '/tmp/evil.dylib',
  NODE_OPTIONS: '--require /tmp/evil.js',
  BASH_ENV: '/tmp/evil.sh',
  ENV: '/tmp/evil.sh',
  'BASH_FUNC_x%%': '() { echo pwned; }',
  GIT_CONFIG_COUNT: '1',
  PYTHONWARNINGS: 'ignore::this.X',
  LANGO_PASSPHRASE: 'correct horse battery staple',
  LANGO_ANYTHING: 'product-config',
  AWS_SECRET_ACCESS_KEY: 'AKIAEXAMPLESECRET',
  OPENAI_API_KEY: 'sk-example',
  SSH_AUTH_SOCK: '/tmp/ssh-agent.sock',
  GITHUB_TOKEN: 'ghp_example',
  DATABASE_URL: 'postgres://user:pass@db/x',
  SHELL: '/tmp/evil-shell',
}

const BASE = {
  ...POISON,
  PATH: '/usr/local/bin::/usr/bin:.:relative/bin:/bin:',
  HOME: '/home/agent',
  LANG: 'C.UTF-8',
  LC_ALL: '../../evil%n',
  TZ: 'Europe/Berlin',
  USER: 'agent',
  SOMETHING_ELSE: 'not on the allowlist',
}

describe('env builder: allowlist first, deny wins (SECURITY.md §1)', () => {
  const builder = createEnvBuilder()

  it('copies only the core allowlist and cleans PATH', () => {
    const { env, dropped } = builder.build({ base: BASE })
    expect(env.PATH).toBe('/usr/local/bin:/usr/bin:/bin')
    expect(env).toMatchObject({ HOME: '/home/agent', LANG: 'C.UTF-8', TZ: 'Europe/Berlin', USER: 'agent' })
    for (const name of [...Object.keys(POISON), 'SOMETHING_ELSE', 'LC_ALL'])
      expect(env).not.toHaveProperty(name)
    expect(dropped).toContain('LC_ALL')
  })

  it('sets non-interactive defaults so tools fail fast instead of prompting', () => {
    const { env } = builder.build({ base: {} })
    expect(env).toMatchObject({ GIT_TERMINAL_PROMPT: '0', PAGER: 'cat', DEBIAN_FRONTEND: 'noninteractive' })
  })

  it('with inherit: all still strips every denied variable', () => {
    const { env } = createEnvBuilder({ inherit: 'all' }).build({ base: BASE })
    expect(env.SOMETHING_ELSE).toBe('not on the allowlist')
    for (const name of Object.keys(POISON)) expect(env).not.toHaveProperty(name)
  })

  it('config allow globs add keys but can never re-admit a denied one', () => {
    const { env } = createEnvBuilder({ allow: ['SOMETHING_*', 'LD_*', 'LANGO_*'] }).build({ base: BASE })
    expect(env.SOMETHING_ELSE).toBe('not on the allowlist')
    expect(env).not.toHaveProperty('LD_PRELOAD')
    expect(env).not.toHaveProperty('LANGO_PASSPHRASE')
  })

  it('config deny globs drop more keys', () => {
    const { env } = createEnvBuilder({ deny: ['TZ'] }).build({ base: BASE })
    expect(env).not.toHaveProperty('TZ')
  })

  it('merges overrides over the base, or replaces the base entirely', () => {
    const merged = builder.build({ base: BASE, overrides: { REPORT_DATE: '2026-11-22' } }).env
    expect(merged).toMatchObject({ HOME: '/home/agent', REPORT_DATE: '2026-11-22' })
    const replaced = builder.build({
      base: BASE,
      overrides: { REPORT_DATE: '2026-11-22' },
      replace: true,
    }).env
    expect(replaced.REPORT_DATE).toBe('2026-11-22')
    expect(replaced).not.toHaveProperty('HOME')
    expect(replaced).not.toHaveProperty('PATH')
  })

  it.each([
    ['PATH', '/tmp'],
    ['HOME', '/tmp'],
    ['NODE_OPTIONS', '--require x'],
    ['npm_config_script_shell', '/tmp/x'],
    ['Path', '/tmp'],
    ['ld_preload', '/tmp/x.so'],
    ['LANGO_PASSPHRASE', 'x'],
    ['GIT_SSH_COMMAND', 'x'],
    ['OPENAI_API_KEY', 'sk-plain-text-not-a-reference'],
    ['BAD NAME', 'x'],
    ['A=B', 'x'],
    ['', 'x'],
    ['FUNC', '() { evil; }'],
    ['WITH_NUL', 'a\0b'],
    ['URL', 'https://user:pass@example.com/'],
  ])('rejects the agent override %s, naming the key and never the value', (name, value) => {
    let caught: unknown
    try {
      builder.build({ base: BASE, overrides: { [name]: value } })
    } catch (error) {
      caught = error
    }
    expect(caught).toMatchObject({ code: 'EXEC_ENV_REJECTED', data: { name } })
    expect((caught as Error).message).toContain(JSON.stringify(name))
    if (value.length > 3) expect((caught as Error).message).not.toContain(value)
  })

  it('lets a credential-named override carry only a secret reference', () => {
    const { env } = builder.build({ base: {}, overrides: { OPENAI_API_KEY: '{{secret:openai}}' } })
    expect(env.OPENAI_API_KEY).toBe('{{secret:openai}}')
  })

  it('trusted overrides may set HOME but still never a denied variable', () => {
    expect(builder.build({ base: {}, overrides: { HOME: '/srv' }, overrideSource: 'trusted' }).env.HOME).toBe(
      '/srv',
    )
    expect(() =>
      builder.build({ base: {}, overrides: { LD_PRELOAD: 'x' }, overrideSource: 'trusted' }),
    ).toThrow(/LD_PRELOAD/)
  })

  it('caps agent override values at 32 KiB', () => {
    expect(() => builder.build({ base: {}, overrides: { BIG: 'x'.repeat(32 * 1024 + 1) } })).toThrow(/32768/)
  })

  it('gives PTY children a TERM', () => {
    expect(builder.build({ base: { TERM: 'screen' }, pty: true }).env.TERM).toBe('screen')
    expect(builder.build({ base: {}, pty: true }).env.TERM).toBe('xterm-256color')
    expect(builder.build({ base: { TERM: 'screen' } }).env).not.toHaveProperty('TERM')
  })

  it('classifies names case-insensitively', () => {
    expect(isDeniedEnvName('ld_library_path')).toBe(true)
    expect(isDeniedEnvName('Git_Dir')).toBe(true)
    expect(isDeniedEnvName('GIT_AUTHOR_NAME')).toBe(false)
    expect(isDeniedEnvName('LC_ALL')).toBe(false)
  })

  it('denies the variables that pick which toolchain binary runs (an outside probe set GOROOT and JAVA_HOME)', () => {
    for (const name of [
      'GOROOT',
      'GOTOOLCHAIN',
      'JAVA_HOME',
      'BASH_LOADABLES_PATH',
      'XDG_CONFIG_DIRS',
      'XDG_DATA_DIRS',
      'NODE_ICU_DATA',
      'PERL_MB_OPT',
    ])
      expect(() => builder.build({ base: {}, overrides: { [name]: '/tmp/evil' } }), name).toThrow(
        new RegExp(name),
      )
  })

  it('cleanPath drops empty, dot, relative and parent-relative entries', () => {
    expect(cleanPath(':/a::.:b:/c/../d:/a:')).toBe('/a')
  })
})

describe('env: every spawner gives children the filtered environment (ENV-8)', () => {
  const names = [
    'LD_PRELOAD',
    'NODE_OPTIONS',
    'BASH_ENV',
    'LANGO_PASSPHRASE',
    'AWS_SECRET_ACCESS_KEY',
    'SSH_AUTH_SOCK',
  ]
  const saved: Record<string, string | undefined> = {}

  function poisonParent(): () => void {
    for (const name of names) {
      saved[name] = process.env[name]
      // LD_PRELOAD must name a loadable library, or a leak would only show as loader warnings.
      process.env[name] = name === 'LD_PRELOAD' ? 'libc.so.6' : `poison-${name}`
    }
    return () => {
      for (const name of names) {
        if (saved[name] === undefined) delete process.env[name]
        else process.env[name] = saved[name]
      }
    }
  }

  function leaked(output: string): string[] {
    return names.filter((name) => output.split('\n').some((line) => line.startsWith(`${name}=`)))
  }

  it('run', async () => {
    const restore = poisonParent()
    try {
      const result = await run('env')
      expect(leaked(result.stdout)).toEqual([])
      expect(result.stdout).toMatch(/^PATH=/m)
      expect(result.stdout).not.toMatch(/^PATH=.*::/m)
    } finally {
      restore()
    }
  })

  it('LANGO_PASSPHRASE is not passed to the child (seed 001)', async () => {
    const restore = poisonParent()
    try {
      const result = await run('echo "[${LANGO_PASSPHRASE:-absent}]"')
      expect(result.stdout).toBe('[absent]\n')
    } finally {
      restore()
    }
  })

  it('merges custom variables with the base (seed 001)', async () => {
    const result = await run('echo "$REPORT_DATE $HOME"', { env: { REPORT_DATE: '2026-11-22' } })
    expect(result.stdout).toBe(`2026-11-22 ${process.env.HOME}\n`)
  })

  it('replaces the base when asked (seed 001)', async () => {
    const result = await run('echo "$REPORT_DATE [${HOME:-no-home}]"', {
      env: { REPORT_DATE: '2026-11-22' },
      replaceEnv: true,
    })
    expect(result.stdout).toBe('2026-11-22 [no-home]\n')
  })

  it('background processes', async () => {
    const restore = poisonParent()
    await using registry = new ProcessRegistry()
    try {
      const process = await registry.start('env')
      await process.wait()
      expect(leaked(process.read(0).output)).toEqual([])
    } finally {
      restore()
    }
  })

  it('rejects a bad agent override before spawning anything', async () => {
    await expect(run('true', { env: { LD_PRELOAD: '/tmp/x.so' } })).rejects.toMatchObject({
      code: 'EXEC_ENV_REJECTED',
    })
  })
})

describe('agent overrides that run programs or move trust roots (issue 11, finding 9)', () => {
  const builder = createEnvBuilder()

  it.each([
    ['MANOPT', '--pager=sh -c id'],
    ['PAGER', 'sh -c id'],
    ['GIT_PAGER', 'sh -c id'],
    ['SYSTEMD_PAGER', 'sh -c id'],
    ['PSQL_PAGER', 'sh -c id'],
    ['AWS_PAGER', 'sh -c id'],
    ['EDITOR', 'sh -c id'],
    ['VISUAL', 'sh -c id'],
    ['KUBE_EDITOR', 'sh -c id'],
    ['GIT_EDITOR', 'sh -c id'],
    ['AWS_CONFIG_FILE', '/tmp/evil-aws-config'],
    ['OPENSSL_MODULES', '/tmp/evil-modules'],
    ['OPENSSL_CONF', '/tmp/evil.cnf'],
    ['PYTHONPLATLIBDIR', '../../tmp/evil'],
    ['PYTHONSAFEPATH', '0'],
    ['PERL5SHELL', 'sh -c id'],
    ['LESS', '+!id'],
    ['LC_ALL', '/tmp/evil-locale'],
    ['LC_MESSAGES', '../../tmp/x'],
    ['LANG', 'en_US.UTF-8/../../tmp'],
    ['TZ', '/tmp/evil-zone'],
    ['TZ', ':/tmp/evil-zone'],
    ['TZ', '../../../tmp/evil'],
  ])('rejects %s=%s', (name, value) => {
    let caught: unknown
    try {
      builder.build({ base: {}, overrides: { [name]: value } })
    } catch (error) {
      caught = error
    }
    expect(caught).toMatchObject({ code: 'EXEC_ENV_REJECTED', data: { name } })
    expect((caught as Error).message).not.toContain(value)
  })

  it('still accepts ordinary locale and zone names', () => {
    const { env } = builder.build({
      base: {},
      overrides: { LC_ALL: 'C.UTF-8', LANG: 'de_DE.UTF-8', TZ: 'Europe/Berlin' },
    })
    expect(env).toMatchObject({ LC_ALL: 'C.UTF-8', LANG: 'de_DE.UTF-8', TZ: 'Europe/Berlin' })
  })

  it('drops every PYTHON* and PERL5* variable from the inherited set too', () => {
    const { env } = createEnvBuilder({ inherit: 'all' }).build({
      base: { PYTHONPLATLIBDIR: 'x', PYTHONSAFEPATH: '0', PERL5SHELL: 'x', MANOPT: 'x', KUBE_EDITOR: 'x' },
    })
    for (const name of ['PYTHONPLATLIBDIR', 'PYTHONSAFEPATH', 'PERL5SHELL', 'MANOPT', 'KUBE_EDITOR'])
      expect(env).not.toHaveProperty(name)
  })
})

describe('isCredentialEnv: the rule the builder drops inherited credentials by', () => {
  it('is true for exactly the variables a child never inherits as credentials', () => {
    const base = {
      AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI',
      GITHUB_TOKEN: 'ghp_x',
      PGPASSWORD: 'pw',
      HTTPS_PROXY: 'http://user:pw@proxy:3128',
      HTTP_PROXY: 'http://proxy:3128',
      LANG: 'C.UTF-8',
      MY_APP_MODE: 'fast',
    }
    const { env, dropped } = createEnvBuilder({ inherit: 'all' }).build({ base })
    const credentials = Object.entries(base)
      .filter(([name, value]) => isCredentialEnv(name, value))
      .map(([name]) => name)
    expect(credentials.sort()).toEqual(['AWS_SECRET_ACCESS_KEY', 'GITHUB_TOKEN', 'HTTPS_PROXY', 'PGPASSWORD'])
    for (const name of credentials) {
      expect(dropped).toContain(name)
      expect(env[name]).toBeUndefined()
    }
    expect(env).toMatchObject({ LANG: 'C.UTF-8', MY_APP_MODE: 'fast' })
  })
})
