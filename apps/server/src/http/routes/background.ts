import { Hono } from 'hono'
import type { App } from '../../app/app.js'
import { createOperator } from '../operate.js'
import { defined, knownQuery } from '../responses.js'

/**
 * Background tasks, mounted at `/api/background`: `GET|POST /api/background/tasks`,
 * `GET /api/background/tasks/:id`, `POST /api/background/tasks/:id/cancel` (operator calls:
 * src/http/operate.ts).
 */
export function backgroundRoutes(app: App, shutdown: AbortSignal | undefined): Hono {
  const { operate, bodyObject } = createOperator(app, shutdown)
  const routes = new Hono()

  routes.get('/tasks', knownQuery(['status'], 'TOOL_INVALID_PARAMETERS'), (c) =>
    operate(c, 'bg_list', defined({ status: c.req.query('status') || undefined })),
  )
  routes.get('/tasks/:id', (c) => operate(c, 'bg_status', { task_id: c.req.param('id') }))
  routes.post('/tasks', async (c) => {
    const body = await bodyObject(c)
    if ('response' in body) return body.response
    return operate(c, 'bg_submit', body.value)
  })
  routes.post('/tasks/:id/cancel', (c) => operate(c, 'bg_cancel', { task_id: c.req.param('id') }))

  return routes
}
