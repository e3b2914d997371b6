import { defineProject } from 'vitest/config'

/**
 * Shared vitest settings for every package: forked workers (native modules), restored mocks,
 * and generous timeouts for tests that spawn real processes. `expect.poll` waits for its condition
 * up to 15 s instead of vitest's 1 s: CI shares two cores, and a deadline is not an assertion. The
 * default test deadline is 60 s: on two cores shared with five other builds, a fuzz of 300 parses
 * and a test that migrates a fresh database each took over 20 s.
 * @param {{ name: string, testTimeout?: number }} options
 */
export function langoProject(options) {
  return defineProject({
    test: {
      name: options.name,
      pool: 'forks',
      restoreMocks: true,
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      testTimeout: options.testTimeout ?? 60_000,
      // Hooks open databases and compile examples: on a loaded machine they need as long as a test.
      hookTimeout: Math.max(options.testTimeout ?? 60_000, 60_000),
      expect: { poll: { timeout: 15_000 } },
    },
  })
}
