import { describe, expect, it } from 'vitest'
import { checkPty } from '../src/cli/doctor/native.js'

// node-pty is an optional dependency of the published @lango/server (issue 24): npm skips it when it
// cannot build, exec then runs without a terminal, and `lango doctor` says so as a warning.
describe('lango doctor: node-pty', () => {
  it('spawns a terminal with the installed node-pty', async () => {
    expect(await checkPty()).toEqual({ name: 'node-pty', status: 'ok', message: 'spawns a terminal' })
  })

  it('warns, not fails, when node-pty is not installed, and says exec runs without a terminal', async () => {
    const missing = Object.assign(new Error("Cannot find package 'node-pty'"), {
      code: 'ERR_MODULE_NOT_FOUND',
    })
    const result = await checkPty(() => Promise.reject(missing))
    expect(result).toMatchObject({ name: 'node-pty', status: 'warn' })
    expect(result.message).toContain('not installed (optional): exec runs commands without a terminal')
    expect(result.fix).toContain('reinstall @lango/server')
  })

  it('warns when node-pty is installed but its native module does not load', async () => {
    const broken = new Error('The module was compiled against a different Node.js version')
    const result = await checkPty(() => Promise.reject(broken))
    expect(result).toMatchObject({ name: 'node-pty', status: 'warn' })
    expect(result.message).toContain('does not load (optional)')
    expect(result.message).toContain('different Node.js version')
  })
})
