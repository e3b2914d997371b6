import { defineConfig } from 'tsup'

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    sqlite: 'src/sqlite/index.ts',
    testing: 'src/testing/index.ts',
    'testing/vitest': 'src/testing/vitest.ts',
  },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  external: ['better-sqlite3', 'vitest'],
})
