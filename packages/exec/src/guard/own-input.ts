import { posix } from 'node:path'

/**
 * True when a script path may be the command's own input: `-`, or a path that ends in
 * `dev/stdin`, `dev/fd/N` or `proc/<id>/fd/N` (`<id>/task/<tid>/fd/N` too), however it gets there —
 * absolute, relative (`../../dev/stdin` from anywhere, `dev/stdin` from `/`), through
 * `/proc/self/root/…`, with `.`, `..` and doubled slashes. A shell or interpreter given such a
 * script reads its here-document, here-string or pipe as code (`sh /dev/stdin <<< "…"`), not as
 * data. Conservative by design: a project file that happens to be named `dev/stdin` counts too.
 */
export function namesOwnInput(path: string): boolean {
  if (path === '-') return true
  const normal = posix.normalize(path)
  return (
    /(?:^|\/)dev\/(?:stdin|fd\/\d+)$/.test(normal) ||
    /(?:^|\/)proc\/[^/]+\/(?:task\/[^/]+\/)?fd\/\d+$/.test(normal)
  )
}
