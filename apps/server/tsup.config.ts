import { cp } from 'node:fs/promises'
import { defineConfig } from 'tsup'

export default defineConfig({
  entry: {
    cli: 'src/cli.ts',
    index: 'src/index.ts',
  },
  format: ['esm'],
  // Declarations for the programmatic entry only (`@lango/server` exports it); the CLI needs none.
  dts: { entry: { index: 'src/index.ts' } },
  sourcemap: true,
  clean: true,
  target: 'node20',
  external: ['@lango/better-sqlite3', 'node-pty'],
  // The dashboard's browser modules are served as they are (no build step): copy them next to the
  // chunks, where `src/ui/index.ts` looks for them (`./assets/` from its own URL).
  async onSuccess() {
    await cp('src/ui/assets', 'dist/assets', {
      recursive: true,
      filter: (source) => !source.endsWith('.json') && !source.endsWith('.d.ts'),
    })
  },
})
