import { closeSync, readdirSync, readFileSync } from 'node:fs'

/** `O_CLOEXEC` in the `flags:` line of `/proc/<pid>/fdinfo/<fd>` (octal, as the kernel prints it). */
const O_CLOEXEC = 0o2000000

/**
 * Closes the file descriptors this process inherited open across `exec` (3 and up, without
 * close-on-exec), so that no command it starts gets them: a descriptor its parent leaked (a pipe of
 * a job runner, `lango serve 20</run/secret`) is otherwise handed to every child, PTY ones included,
 * because a spawn passes on every descriptor not marked close-on-exec. Node marks 0–15 at start and
 * stops at the first gap after them; libuv and Node open their own with close-on-exec, so the ones
 * left without it are the inherited ones. Call once at start, before anything is spawned, as with
 * {@link ensureOrphanReaper}. `keep` names descriptors the host still uses. Linux (`/proc`); elsewhere
 * it does nothing and returns `[]`. Returns the descriptors it closed.
 * @example
 * const closed = closeInheritedDescriptors()
 * if (closed.length > 0) logger.info('closed descriptors inherited from the parent', { closed })
 */
export function closeInheritedDescriptors(keep: readonly number[] = []): number[] {
  let listed: string[]
  try {
    listed = readdirSync('/proc/self/fd')
  } catch {
    return []
  }
  const closed: number[] = []
  for (const name of listed) {
    const fd = Number(name)
    if (!Number.isInteger(fd) || fd < 3 || keep.includes(fd)) continue
    let flags: number
    try {
      const match = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))
      if (match === null) continue
      flags = Number.parseInt(match[1] as string, 8)
    } catch {
      // Gone meanwhile (the directory's own descriptor, read above, is one).
      continue
    }
    if ((flags & O_CLOEXEC) !== 0) continue
    try {
      closeSync(fd)
      closed.push(fd)
    } catch {
      // Already closed.
    }
  }
  return closed
}
