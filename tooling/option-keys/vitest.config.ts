import { langoProject } from '@lango/vitest-config'

export default langoProject({ name: 'option-keys' })
