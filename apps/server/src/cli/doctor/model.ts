import type { ServerConfig } from '../../config/types.js'
import type { CheckResult } from './check.js'
import { getJson, networkProblem, shownUrl } from './http.js'

/** The model server answers `/models`, accepts the key, and lists the configured model. */
export async function checkModel(config: ServerConfig): Promise<CheckResult> {
  const { baseUrl, name, apiKey } = config.model
  if (baseUrl === undefined)
    return {
      name: 'model',
      status: 'warn',
      message:
        'no model configured: agent runs (ai cron jobs, background tasks, prompt steps) fail with "no model configured"',
      fix: 'set LANGO_MODEL_BASE_URL and LANGO_MODEL (and LANGO_MODEL_API_KEY), or model: in lango.yaml',
    }
  const shown = shownUrl(baseUrl)
  const url = `${baseUrl.replace(/\/+$/, '')}/models`
  let answer: { status: number; json: unknown }
  try {
    answer = await getJson(url, apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` })
  } catch (error) {
    return {
      name: 'model',
      status: 'fail',
      message: `${shown}/models: ${networkProblem(error)}`,
      fix: 'check LANGO_MODEL_BASE_URL and that the model server is running',
    }
  }
  if (answer.status === 401 || answer.status === 403)
    return {
      name: 'model',
      status: 'fail',
      message: `${shown} refused the API key (${answer.status})`,
      fix: 'check LANGO_MODEL_API_KEY',
    }
  if (answer.status < 200 || answer.status > 299)
    return {
      name: 'model',
      status: 'fail',
      message: `${shown}/models answered ${answer.status}`,
      fix: 'LANGO_MODEL_BASE_URL must be an OpenAI-compatible base URL (usually ending in /v1)',
    }
  const models = ((answer.json as { data?: unknown } | undefined)?.data ?? []) as { id?: unknown }[]
  const ids = Array.isArray(models)
    ? models.map((model) => model.id).filter((id): id is string => typeof id === 'string')
    : []
  if (name === undefined)
    return {
      name: 'model',
      status: 'warn',
      message: `${shown} reachable (${ids.length} models) but no model name is set`,
      fix: 'set LANGO_MODEL (or model.name in lango.yaml)',
    }
  if (ids.length > 0 && !ids.includes(name))
    return {
      name: 'model',
      status: 'warn',
      message: `${shown} reachable, but it does not list ${name} (${ids.length} models)`,
      fix: `check LANGO_MODEL against the server's models: ${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ', …' : ''}`,
    }
  return { name: 'model', status: 'ok', message: `${name} at ${shown} reachable` }
}
