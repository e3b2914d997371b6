import { defineConfig } from 'tsup'

export default defineConfig({
  entry: {
    cli: 'src/cli.ts',
    index: 'src/index.ts',
    'db/checkpointer-worker': 'src/db/checkpointer-worker.ts',
  },
  format: ['esm'],
  dts: false,
  sourcemap: true,
  clean: true,
  target: 'node20',
  banner: { js: '' },
  external: ['better-sqlite3', 'node-pty'],
})
