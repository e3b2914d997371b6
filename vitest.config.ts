import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    // Most test files wait on child processes, sockets and timers rather than the CPU. Vitest's
    // default for forked workers is one fewer than the cores: one file at a time on a two-core
    // machine such as CI's. Two at least there took the suite from 10 to 6 minutes (9 with two
    // CPU-bound processes beside it); on larger machines this is vitest's default.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: ['packages/*', 'apps/*', 'examples', 'tooling/duration', 'tooling/package-checks'],
  },
})
