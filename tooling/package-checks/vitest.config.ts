import { langoProject } from '@lango/vitest-config'

export default langoProject({ name: 'package-checks', testTimeout: 120_000 })
