import { langoProject } from '@lango/vitest-config'

export default langoProject({ name: 'tools', testTimeout: 30_000 })
