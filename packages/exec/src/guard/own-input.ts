import { posix } from 'node:path'

/**
 * True when a script path is the command's own input: `-`, `/dev/stdin`, `/dev/fd/N` or
 * `/proc/<self|thread-self|pid>/fd/N`, written any way `.`, `..` and doubled slashes allow. A shell
 * or interpreter given such a script reads its here-document, here-string or pipe as code
 * (`sh /dev/stdin <<< "…"`), not as data.
 */
export function namesOwnInput(path: string): boolean {
  if (path === '-') return true
  const normal = posix.normalize(path.replace(/^\/+/, '/'))
  return (
    /^\/dev\/(?:stdin|fd\/\d+)$/.test(normal) || /^\/proc\/(?:self|thread-self|\d+)\/fd\/\d+$/.test(normal)
  )
}
