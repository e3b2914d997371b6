import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    projects: ['packages/*', 'apps/*', 'examples', 'tooling/duration', 'tooling/package-checks'],
  },
})
