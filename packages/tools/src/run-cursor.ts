import * as v from 'valibot'

/**
 * The `next_cursor` of a page of runs (`cron_history`, `workflow_list`): the last run's sort key (a
 * time in epoch milliseconds) and id, as `<key>.<id>` in base64url. Opaque to callers.
 */
export function encodeRunCursor(key: number, id: string): string {
  return Buffer.from(`${key}.${id}`).toString('base64url')
}

/** The key and id a cursor holds, or undefined when `text` is not one {@link encodeRunCursor} made. */
export function decodeRunCursor(text: string): { readonly key: number; readonly id: string } | undefined {
  const decoded = Buffer.from(text, 'base64url').toString('utf8')
  const dot = decoded.indexOf('.')
  if (dot <= 0) return undefined
  const key = Number(decoded.slice(0, dot))
  const id = decoded.slice(dot + 1)
  if (!Number.isSafeInteger(key) || id.length === 0 || id.length > 200) return undefined
  return { key, id }
}

/** The optional `cursor` parameter of a tool that lists runs a page at a time; `sameAs` names the filters it goes with. */
export function runCursorParameter(sameAs: string) {
  return v.optional(
    v.pipe(
      v.string('cursor must be a string'),
      v.maxLength(400, 'cursor must be at most 400 characters'),
      v.check(
        (text) => decodeRunCursor(text) !== undefined,
        'cursor must be a next_cursor of an earlier page',
      ),
      v.description(`The next_cursor of the page before (same ${sameAs}): older runs.`),
    ),
  )
}
