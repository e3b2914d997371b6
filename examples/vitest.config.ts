import { langoProject } from '@lango/vitest-config'

const base = langoProject({ name: 'examples', testTimeout: 60_000 })

export default { ...base, test: { ...base.test, include: ['mcp-host/**/*.test.ts'] } }
