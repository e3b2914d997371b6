/** The kinds a cron skip reason falls into: the label values of `lango_cron_skipped_total`. */
export type SkipReasonKind =
  | 'missed'
  | 'overlap'
  | 'queue_full'
  | 'budget'
  | 'when'
  | 'paused'
  | 'stopped'
  | 'other'

/**
 * The kind of a cron skip reason. Reasons are sentences with durations and counts in them (one
 * time series each, were they labels as they are); their first words say which kind they are
 * (@lango/cron: catch-up, run slots, the AI budget, pausing and stopping).
 */
export function skipReasonKind(reason: string | null | undefined): SkipReasonKind {
  const text = (reason ?? '').trimStart().toLowerCase()
  if (text.startsWith('missed')) return 'missed'
  if (text.startsWith('overlap')) return 'overlap'
  if (text.startsWith('queue full')) return 'queue_full'
  if (text.startsWith('budget')) return 'budget'
  if (text.startsWith('when:')) return 'when'
  if (text.includes('paused')) return 'paused'
  if (text.includes('stopped')) return 'stopped'
  return 'other'
}
