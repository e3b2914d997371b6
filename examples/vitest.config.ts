import { langoProject } from '@lango/vitest-config'

export default langoProject({ name: 'examples', testTimeout: 60_000 })
