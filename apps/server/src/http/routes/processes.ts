import { Hono } from 'hono'
import type { App } from '../../app/app.js'
import { createOperator } from '../operate.js'
import { defined, errorResponse, queryNumber } from '../responses.js'

/** How much of a background process's output `GET /api/processes` shows: its last 2 KiB. */
const OUTPUT_TAIL_BYTES = 2048

/** The end of a process's buffered output (a character cut by the start of the window is left out). */
function outputTail(app: App, id: string, outputBytes: number): string {
  const process = app.processes.get(id)
  if (process === undefined) return ''
  return process.read(Math.max(0, outputBytes - OUTPUT_TAIL_BYTES)).output.replace(/^\uFFFD+/, '')
}

/**
 * The file name a download of a process's output gets: its id (letters, digits, `_` and `-` only;
 * anything else becomes `_`) and `.log`.
 */
function outputFileName(id: string): string {
  return `${id.replace(/[^A-Za-z0-9_-]/g, '_')}.log`
}

/**
 * Background processes, mounted at `/api/processes`: `GET /api/processes` (each with the tail of
 * its output), `GET /api/processes/:id`, `GET /api/processes/:id/output` (all its buffered output
 * as a text file), `POST /api/processes/:id/stop` (operator calls: src/http/operate.ts).
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
  // All the output the process still holds, as a file (the dashboard's "Download whole output"). It
  // was masked as it was written (exec masks secrets before buffering), as exec_status's is.
  routes.get('/:id/output', (c) => {
    if (!app.tools.some((tool) => tool.name === 'exec_status'))
      return errorResponse(
        c,
        'TOOL_NOT_FOUND',
        "exec is disabled in this server's configuration (exec.enabled in lango.yaml)",
      )
    const id = c.req.param('id')
    const process = app.processes.get(id)
    if (process === undefined)
      return errorResponse(
        c,
        'TOOL_FAILED',
        `no background process with id ${JSON.stringify(id)}`,
        { reason: 'EXEC_PROCESS_NOT_FOUND' },
        404,
      )
    const read = process.read(0)
    // What the bounded buffer overwrote before this read is said on the first line, not left out silently.
    const dropped =
      read.offset > 0
        ? `[lango: the first ${read.offset} bytes of output were overwritten before this download; what follows is the rest]\n`
        : ''
    return c.body(`${dropped}${read.output}`, 200, {
      'content-type': 'text/plain; charset=utf-8',
      'content-disposition': `attachment; filename="${outputFileName(process.id)}"`,
      'x-lango-dropped-bytes': String(read.offset),
      'cache-control': 'no-store',
    })
  })
  routes.post('/:id/stop', (c) => operate(c, 'exec_stop', { id: c.req.param('id') }))

  return routes
}
