// Runs the line chat without a Lango server, with a stand-in for the agent: it echoes each line,
// and asks the writer's approval first when a line starts with `rm `. Try it:
//   node examples/channel-adapter/demo.mjs        then, in other terminals: nc 127.0.0.1 7879
import createLineChat from './line-chat.mjs'

const log = (level) => (message, fields) => console.error(JSON.stringify({ level, message, ...fields }))
const logger = { debug: () => undefined, info: log('info'), warn: log('warn'), error: log('error') }
const port = Number(process.argv[2] ?? 7879)
const chat = createLineChat({ port }, { name: 'line', home: process.cwd(), logger })

await chat.start(
  async (message, { signal }) => {
    const sessionKey = `${message.channel}:${message.chatId}:${message.userId}`
    if (message.text.startsWith('rm ')) {
      const approved = await chat.requestApproval(
        message.chatId,
        message.userId,
        { toolName: 'exec', safety: 'dangerous', summary: message.text, sessionKey },
        { signal },
      )
      if (approved !== true) return `(${sessionKey}) not approved: nothing ran`
      return `(${sessionKey}) approved — a real agent would run: ${message.text}`
    }
    return `(${sessionKey}) you said: ${message.text}`
  },
  { signal: AbortSignal.timeout(24 * 60 * 60_000) },
)
console.error(
  `line chat on 127.0.0.1:${chat.address?.port}; connect with: nc 127.0.0.1 ${chat.address?.port}`,
)
const shutdown = () => void chat.stop().then(() => process.exit(0))
process.once('SIGINT', shutdown)
process.once('SIGTERM', shutdown)
