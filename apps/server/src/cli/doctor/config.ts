import type { ServerConfig } from '../../config/types.js'
import type { CommandContext } from '../context.js'
import { type CheckResult, shortPath } from './check.js'

/** The configuration loads (the other checks need it): where from, and any deprecated values. */
export async function checkConfig(
  context: CommandContext,
): Promise<{ check: CheckResult; config?: ServerConfig }> {
  try {
    const config = await context.config()
    const { redactedConfig } = await import('../../config/redact.js')
    const where =
      config.file === undefined
        ? `no lango.yaml in ${shortPath(config.home)}: defaults apply`
        : shortPath(config.file)
    const details = { file: config.file ?? null, home: config.home, config: redactedConfig(config) }
    if (config.warnings.length > 0) {
      const first = config.warnings[0] as (typeof config.warnings)[number]
      return {
        config,
        check: {
          name: 'config',
          status: 'warn',
          message: `${where}: ${config.warnings.length} value(s) in a deprecated form, e.g. ${first.key}${first.line === undefined ? '' : ` (line ${first.line})`}: ${first.message}`,
          fix: 'write each duration with its unit (30s, 5m, 1h30m), as the warnings say',
          details: { ...details, warnings: config.warnings },
        },
      }
    }
    return { config, check: { name: 'config', status: 'ok', message: where, details } }
  } catch (error) {
    const { ConfigError } = await import('../../config/errors.js')
    if (!ConfigError.is(error)) throw error
    return {
      check: {
        name: 'config',
        status: 'fail',
        message: error.message,
        fix: 'correct the keys named above (in lango.yaml or the LANGO_* variables); the server will not start until then',
        details: { issues: error.issues },
      },
    }
  }
}
