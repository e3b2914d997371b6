import { Option } from 'commander'
import type { ApprovalView } from '../../approvals.js'
import type { Register } from '../command.js'
import { ApiError, CliError } from '../errors.js'
import { formatTime, type Output, oneLine } from '../output.js'

/** A tool as `GET /api/tools` lists it. */
interface ToolView {
  readonly name: string
  readonly title?: string
  readonly description: string
  readonly safety: string
  readonly worst_safety?: string
  readonly parameters?: unknown
}

/** `lango tools [name]`: the catalogue the server serves over HTTP and MCP. */
export const registerTools: Register = (program, action) => {
  program
    .command('tools')
    .description("the server's tools with their safety; with a name, that tool's description and parameters")
    .argument('[name]', 'one tool')
    .action(
      action(async (context, [name]) => {
        const client = await context.client()
        const data = await client.get<{ tools: ToolView[]; count: number }>('/api/tools')
        if (name === undefined) return { data, render: (out) => renderTools(out, data.tools) }
        const tool = data.tools.find((candidate) => candidate.name === name)
        if (tool === undefined)
          throw new CliError(
            'CLI_NOT_FOUND',
            `no tool named ${JSON.stringify(name.slice(0, 64))}; \`lango tools\` lists them`,
          )
        return {
          data: tool,
          render: (out) => {
            out.fields([
              ['name', tool.name],
              ['title', tool.title],
              [
                'safety',
                tool.worst_safety && tool.worst_safety !== tool.safety
                  ? `${tool.safety} (up to ${tool.worst_safety})`
                  : tool.safety,
              ],
            ])
            out.print(
              `\n${tool.description}\n\nparameters (JSON Schema):\n${JSON.stringify(tool.parameters ?? {}, null, 2)}`,
            )
          },
        }
      }),
    )
}

/** `lango approvals list|show|approve|deny`: answers tool calls waiting for a person. */
export const registerApprovals: Register = (program, action) => {
  const approvals = program
    .command('approvals')
    .description('tool calls waiting for approval on the running server')

  approvals
    .command('list')
    .description('pending approvals first, then recent answers')
    .addOption(
      new Option('--status <status>', 'only approvals in this state').choices([
        'pending',
        'approved',
        'denied',
        'expired',
        'cancelled',
      ]),
    )
    .action(
      action(async (context, _args, options) => {
        const client = await context.client()
        const data = await client.get<{ approvals: ApprovalView[]; count: number }>('/api/approvals', {
          query: { status: options.status },
        })
        return { data, render: (out) => renderApprovals(out, data.approvals) }
      }),
    )

  approvals
    .command('show')
    .description('one approval with its whole request: every command it would run')
    .argument('<id>', 'approval id')
    .action(
      action(async (context, [id = '']) => {
        const client = await context.client()
        const data = await client.get<ApprovalView>(`/api/approvals/${encodeURIComponent(id)}`)
        return { data, render: (out) => renderApproval(out, data) }
      }),
    )

  for (const decision of ['approve', 'deny'] as const)
    approvals
      .command(decision)
      .description(decision === 'approve' ? 'let a pending call run' : 'refuse a pending call')
      .argument('<id>', 'approval id')
      .action(
        action(async (context, [id = '']) => {
          const client = await context.client()
          const decided = await client
            .post<ApprovalView>(`/api/approvals/${encodeURIComponent(id)}`, { body: { decision } })
            .catch((error: unknown) => {
              // Answered earlier, expired or cancelled: shown as it stands, and not this answer.
              const stands =
                error instanceof ApiError && error.code === 'SERVER_APPROVAL_DECIDED' && error.data?.approval
              if (stands) return { late: stands as ApprovalView }
              throw error
            })
          if ('late' in decided) {
            const data = decided.late
            return {
              data,
              exitCode: 1,
              render: (out) => out.error(`approval ${data.id} was already ${data.status}`),
            }
          }
          const data = decided
          return {
            data,
            render: (out) =>
              out.print(
                `${out.paint(decision === 'approve' ? 'green' : 'red', data.status)} ${data.tool}: ${data.summary}`,
              ),
          }
        }),
      )
}

function renderTools(out: Output, tools: readonly ToolView[]): void {
  out.table(
    ['NAME', 'SAFETY', 'DESCRIPTION'],
    tools.map((tool) => [
      tool.name,
      { text: tool.worst_safety ?? tool.safety, style: safetyStyle(tool.worst_safety ?? tool.safety) },
      oneLine(tool.title ?? tool.description, 70),
    ]),
    'no tools',
  )
}

function safetyStyle(safety: string) {
  return safety === 'dangerous'
    ? ('red' as const)
    : safety === 'moderate'
      ? ('yellow' as const)
      : ('green' as const)
}

/**
 * The table of approvals (summaries shortened to a line), then every pending one with its whole
 * summary: what can still be approved is always shown in full.
 */
function renderApprovals(out: Output, approvals: readonly ApprovalView[]): void {
  out.table(
    ['ID', 'STATUS', 'TOOL', 'SUMMARY', 'EXPIRES'],
    approvals.map((approval) => [
      approval.id,
      out.status(approval.status),
      approval.tool,
      oneLine(approval.summary, 60),
      approval.status === 'pending' ? formatTime(approval.expires_at) : '-',
    ]),
    'no approvals',
  )
  const pending = approvals.filter((approval) => approval.status === 'pending')
  if (pending.length === 0) return
  out.print(`\n${out.paint('bold', 'Pending, in full')} (read each before you approve it):`)
  for (const approval of pending) {
    out.print(`\n${out.paint('bold', approval.id)}  ${approval.tool} (${approval.safety})`)
    out.print(indent(approval.summary))
  }
}

/** One approval: its fields, then its whole summary, then what became of the call. */
function renderApproval(out: Output, approval: ApprovalView): void {
  out.fields([
    ['id', approval.id],
    ['status', out.status(approval.status)],
    ['tool', approval.tool],
    ['safety', approval.safety],
    ['session', approval.session_key ?? '-'],
    ['asked', formatTime(approval.created_at)],
    approval.status === 'pending'
      ? ['expires', formatTime(approval.expires_at)]
      : ['answered', formatTime(approval.answered_at)],
    ['answered by', approval.decided_by ?? '-'],
  ])
  out.print(`\n${out.paint('bold', 'request')} (whole):`)
  out.print(indent(approval.summary))
  if (approval.outcome !== null)
    out.print(`\n${out.paint('bold', 'outcome')}:\n${indent(JSON.stringify(approval.outcome, null, 2))}`)
}

/** Every line of `text` indented by two spaces. */
function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n')
}
