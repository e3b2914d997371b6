/**
 * The order in which one scheduler takes the occurrences found due at one instant: a permutation of
 * `items` by a hash of its owner id and each item's key. Every scheduler on a database finds the
 * same occurrences due at the same instant; taken in one shared order, they would all race for the
 * same rows, the losers waiting on the winner's insert, then all race for the next ones. In an order
 * of its own, each claims other rows first, and the runs of a burst spread over the schedulers
 * instead of piling on whichever wins the first race. The order is stable for one owner (the same
 * items come out the same way every time) and costs one hash per item.
 */
export function claimOrder<T>(items: readonly T[], ownerId: string, keyOf: (item: T) => string): T[] {
  if (items.length < 2) return [...items]
  const rank = claimRank(ownerId)
  return items
    .map((item) => ({ item, rank: rank(keyOf(item)) }))
    .sort((a, b) => a.rank - b.rank)
    .map(({ item }) => item)
}

/** The rank of a key in {@link claimOrder}'s order for `ownerId`: lower ranks are taken first. */
export function claimRank(ownerId: string): (key: string) => number {
  const seed = fnv1a(ownerId, FNV_OFFSET)
  return (key) => fnv1a(key, seed)
}

const FNV_OFFSET = 0x811c9dc5
const FNV_PRIME = 0x01000193

/** 32-bit FNV-1a of `text`, continuing from `hash`. */
function fnv1a(text: string, hash: number): number {
  let value = hash
  for (let index = 0; index < text.length; index++) {
    value ^= text.charCodeAt(index)
    value = Math.imul(value, FNV_PRIME)
  }
  return value >>> 0
}
