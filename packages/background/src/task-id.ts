import { randomBytes } from 'node:crypto'

/**
 * The default id generator: a random 8-hex-digit prefix chosen once per manager, then a counter
 * (`9f86d081-1`, `9f86d081-2`, …). Ids are unique within a manager and, with high probability,
 * across restarts; they are short enough to type in a chat and cheap to make (a UUID per task costs
 * more than the rest of the bookkeeping). They are not secrets: `list()` shows every id.
 */
export function createTaskIdGenerator(): () => string {
  const prefix = randomBytes(4).toString('hex')
  let count = 0
  return () => {
    count += 1
    return `${prefix}-${count}`
  }
}
