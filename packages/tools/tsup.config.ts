import { defineConfig } from 'tsup'

export default defineConfig({
  entry: { index: 'src/index.ts', mcp: 'src/mcp/index.ts', 'ai-sdk': 'src/ai-sdk/index.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
})
