import { Hono } from 'hono'
import type { App } from '../../app/app.js'
import { createOperator } from '../operate.js'
import { defined, queryNumber } from '../responses.js'

/** How much of a background process's output `GET /api/processes` shows: its last 2 KiB. */
const OUTPUT_TAIL_BYTES = 2048

/** The end of a process's buffered output (a character cut by the start of the window is left out). */
function outputTail(app: App, id: string, outputBytes: number): string {
  const process = app.processes.get(id)
  if (process === undefined) return ''
  return process.read(Math.max(0, outputBytes - OUTPUT_TAIL_BYTES)).output.replace(/^\uFFFD+/, '')
}

/**
 * Background processes, mounted at `/api/processes`: `GET /api/processes` (each with the tail of
 * its output), `GET /api/processes/:id`, `POST /api/processes/:id/stop` (operator calls:
 * src/http/operate.ts).
 */
export function processRoutes(app: App, shutdown: AbortSignal | undefined): Hono {
  const { operate } = createOperator(app, shutdown)
  const routes = new Hono()

  routes.get('/', (c) => {
    const processes = app.processes.list().map((process) => ({
      id: process.id,
      pid: process.pid,
      command: process.command,
      status: process.status,
      exit_code: process.exitCode,
      started_at: new Date(process.startedAt).toISOString(),
      ended_at: process.endedAt === null ? null : new Date(process.endedAt).toISOString(),
      output_bytes: process.outputBytes,
      output_tail: outputTail(app, process.id, process.outputBytes),
    }))
    return c.json({ processes, count: processes.length })
  })
  routes.get('/:id', (c) =>
    operate(c, 'exec_status', defined({ id: c.req.param('id'), offset: queryNumber(c.req.query('offset')) })),
  )
  routes.post('/:id/stop', (c) => operate(c, 'exec_stop', { id: c.req.param('id') }))

  return routes
}
