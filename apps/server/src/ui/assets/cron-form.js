// @ts-check
import { AuthError, api } from './api.js'
import { announce, durationText, h, heading, time } from './dom.js'

/** @import { View, PageContext } from './app.js' */

/**
 * Cron: the form that creates a job (`#/cron/new`, `POST /api/cron/jobs`) or edits one
 * (`#/cron/<id>/edit`, `PATCH /api/cron/jobs/:id`), with a preview of the schedule's next fire
 * times (`POST /api/cron/preview`, storing nothing) drawn while the operator types. The server
 * validates: its refusal is shown above the fields and takes the focus.
 */

/** How long typing must pause before the preview is asked for. */
const PREVIEW_DELAY_MS = 350
/** Fire times the preview shows. */
const PREVIEW_COUNT = 5

const SCHEDULE_HINTS = {
  cron: 'Five fields, minute hour day month weekday: 0 3 * * * is 03:00 every day.',
  every: 'A duration with a unit: 30m, 2h, 1h30m (at least a minute).',
  at: 'One date and time, ISO 8601: 2026-12-24T18:00 (in the time zone below).',
  webhook:
    'A hook name (letters, digits, - or _): each call to POST /hooks/<name>, signed with the vault secret webhook.<name>, starts a run. It never runs by the clock.',
}

/** Which field a server refusal is about, by its `CRON_*` reason, when the error names none. */
const REASON_FIELDS = {
  CRON_INVALID_SCHEDULE: 'schedule',
  CRON_INTERVAL_TOO_SHORT: 'schedule',
  CRON_NEVER_FIRES: 'schedule',
  CRON_AT_IN_PAST: 'schedule',
  CRON_INVALID_TIMEZONE: 'timezone',
  CRON_DUPLICATE_NAME: 'name',
}

/** The form's fields by the API's names; the labels say what the server checks. */
const FIELD_IDS = {
  name: 'job-name',
  schedule_type: 'job-schedule-type',
  schedule: 'job-schedule',
  timezone: 'job-timezone',
  prompt: 'job-prompt',
  command: 'job-command',
  deliver_to: 'job-deliver-to',
  timeout: 'job-timeout',
  overlap: 'job-overlap',
  notify: 'job-notify',
  ping_url: 'job-ping-url',
}

/**
 * The timeout field's text as the API takes it: a bare number is seconds, as the field's hint and
 * the CLI say (`600` → `600s`; the API refuses a duration without a unit); anything else as typed.
 */
function timeoutText(text) {
  return /^\d+(\.\d+)?$/.test(text) ? `${text}s` : text
}

/**
 * The select of the field `name` (its id from FIELD_IDS) offering `choices` (`[value, text]`): a
 * new job's first option is the server's default (sent as nothing); an edited job's stored value is
 * shown selected.
 */
function choiceSelect(name, choices, stored, defaultText) {
  const options = stored === undefined ? [['', defaultText], ...choices] : choices
  return h(
    'select',
    { id: FIELD_IDS[name], name },
    options.map(([value, text]) => h('option', { value, selected: value === (stored ?? '') }, text)),
  )
}

/** `a, b` as the list the API takes (empty entries dropped). */
function targets(text) {
  return String(text)
    .split(',')
    .map((target) => target.trim())
    .filter((target) => target !== '')
}

/**
 * One labelled field with its hint; `control` is the input, select or textarea.
 * @param {string} label
 * @param {HTMLElement} control
 * @param {string} [hint]
 */
function row(label, control, hint) {
  const hintId = hint ? `${control.id}-hint` : undefined
  if (hintId) control.setAttribute('aria-describedby', hintId)
  return h(
    'div',
    { className: 'form-row' },
    h('label', { for: control.id }, label),
    control,
    hint ? h('p', { className: 'muted small hint', id: hintId }, hint) : null,
  )
}

/**
 * The form of a new job (`job` undefined) or of `job`, and its preview.
 * @param {any} job
 * @param {PageContext} page
 */
function jobForm(job, page) {
  const editing = job !== undefined
  const kind = { value: editing ? job.kind : 'ai' }
  const input = (attributes) => h('input', { autocomplete: 'off', ...attributes })
  const name = input({
    id: FIELD_IDS.name,
    name: 'name',
    value: editing ? job.name : '',
    maxlength: '64',
    spellcheck: 'false',
  })
  const scheduleType = h(
    'select',
    { id: FIELD_IDS.schedule_type, name: 'schedule_type' },
    [
      ['cron', 'cron expression'],
      ['every', 'every (a fixed interval)'],
      ['at', 'at (once)'],
      ['webhook', 'webhook (a signed call)'],
    ].map(([value, text]) =>
      h('option', { value, selected: value === (editing ? job.schedule_type : 'cron') }, text),
    ),
  )
  const schedule = input({
    id: FIELD_IDS.schedule,
    name: 'schedule',
    value: editing ? job.schedule : '',
    maxlength: '200',
    spellcheck: 'false',
  })
  const timezone = input({
    id: FIELD_IDS.timezone,
    name: 'timezone',
    value: editing ? job.timezone : '',
    maxlength: '64',
    spellcheck: 'false',
    placeholder: "the server's (cron.timezone)",
  })
  const prompt = h(
    'textarea',
    { id: FIELD_IDS.prompt, name: 'prompt', rows: '4', maxlength: '16000' },
    editing && job.kind === 'ai' ? job.prompt || '' : '',
  )
  const command = h(
    'textarea',
    { id: FIELD_IDS.command, name: 'command', rows: '3', maxlength: '8000', spellcheck: 'false' },
    editing && job.kind === 'shell' ? job.command || '' : '',
  )
  const deliverTo = input({
    id: FIELD_IDS.deliver_to,
    name: 'deliver_to',
    value: editing && job.deliver_to ? job.deliver_to.join(', ') : '',
    spellcheck: 'false',
  })
  const timeout = input({
    id: FIELD_IDS.timeout,
    name: 'timeout',
    value: editing ? durationText(job.timeout_ms) : '',
    maxlength: '32',
    spellcheck: 'false',
    placeholder: '10m (the default)',
  })
  const overlap = choiceSelect(
    'overlap',
    [
      ['skip', 'skip: a run due while one goes is skipped'],
      ['queue_one', 'queue_one: it waits, one at most'],
      ['allow', 'allow: both run'],
    ],
    editing ? job.overlap : undefined,
    'default (skip; queue_one for webhook jobs)',
  )
  const notify = choiceSelect(
    'notify',
    [
      ['always', 'always: every run'],
      ['failure', 'failure: failed runs only'],
      ['state_changes', 'state_changes: when it starts or stops failing'],
      ['never', 'never: history only'],
    ],
    editing ? job.notify : undefined,
    'default (always)',
  )
  const pingUrl = input({
    id: FIELD_IDS.ping_url,
    name: 'ping_url',
    type: 'url',
    value: editing && job.ping_url ? job.ping_url : '',
    maxlength: '2048',
    spellcheck: 'false',
    placeholder: 'https://hc-ping.com/<uuid>',
  })
  const promptRow = row('Prompt', prompt, 'What the agent does on each run.')
  const commandRow = row(
    'Command',
    command,
    'Runs in a shell on each run; {{secret:NAME}} tokens stay tokens.',
  )
  const scheduleHint = h('p', { className: 'muted small hint', id: `${FIELD_IDS.schedule}-hint` })
  schedule.setAttribute('aria-describedby', scheduleHint.id)

  const showKind = () => {
    promptRow.hidden = kind.value !== 'ai'
    commandRow.hidden = kind.value !== 'shell'
  }
  const showHint = () => {
    scheduleHint.textContent = SCHEDULE_HINTS[/** @type {HTMLSelectElement} */ (scheduleType).value] || ''
  }
  showKind()
  showHint()

  const kindField = editing
    ? h(
        'p',
        { className: 'form-row' },
        'Kind: ',
        h('strong', {}, job.kind),
        h('span', { className: 'muted' }, ' (a job keeps its kind)'),
      )
    : h(
        'fieldset',
        { className: 'form-row kind' },
        h('legend', {}, 'Kind'),
        [
          ['ai', 'ai: an agent runs a prompt'],
          ['shell', 'shell: a command runs'],
        ].map(([value, text]) =>
          h(
            'label',
            {},
            h('input', {
              type: 'radio',
              name: 'kind',
              value,
              checked: value === kind.value,
              onchange: (event) => {
                kind.value = /** @type {HTMLInputElement} */ (event.currentTarget).value
                showKind()
              },
            }),
            ` ${text}`,
          ),
        ),
      )

  // ---- the preview, asked for while typing ----
  const previewStatus = h('p', { className: 'preview-status', 'aria-live': 'polite' })
  const previewList = h('ol', { className: 'next-runs', 'aria-label': 'Next fire times' })
  let previewTimer = 0
  let previewSeq = 0
  const preview = async () => {
    const seq = ++previewSeq
    const body = {
      schedule_type: /** @type {HTMLSelectElement} */ (scheduleType).value,
      schedule: /** @type {HTMLInputElement} */ (schedule).value.trim(),
      count: PREVIEW_COUNT,
    }
    const zone = /** @type {HTMLInputElement} */ (timezone).value.trim()
    if (zone) body.timezone = zone
    if (!body.schedule) {
      previewStatus.textContent = 'Type a schedule to see when it fires.'
      previewList.replaceChildren()
      return
    }
    let answer
    try {
      answer = await api('/api/cron/preview', { method: 'POST', json: body, accept: [400, 422] })
    } catch (error) {
      answer = { error: { message: String(error.message || error) } }
    }
    if (seq !== previewSeq) return
    if (answer?.error) {
      previewStatus.textContent = `No preview: ${answer.error.message}`
      previewList.replaceChildren()
      return
    }
    const shown = answer.preview
    previewStatus.setAttribute('data-zone', shown.timezone)
    if (shown.schedule_type === 'webhook') {
      // No times: a signed call starts each run.
      previewStatus.textContent = `Runs ${shown.description}: each signed POST /hooks/${shown.schedule} starts a run.`
      previewList.replaceChildren()
      return
    }
    previewStatus.textContent = `${shown.description}. Times in ${shown.timezone}; the next ${shown.fires.length}:`
    previewList.replaceChildren(
      ...shown.fires.map((fire) =>
        h('li', {}, time(fire.utc, shown.timezone), ' ', h('span', { className: 'muted' }, fire.local)),
      ),
    )
  }
  const schedulePreview = () => {
    clearTimeout(previewTimer)
    previewTimer = setTimeout(preview, PREVIEW_DELAY_MS)
  }
  for (const control of [scheduleType, schedule, timezone]) control.addEventListener('input', schedulePreview)
  scheduleType.addEventListener('change', showHint)

  // ---- saving ----
  const errorBox = h('div', {
    className: 'error form-error',
    id: 'job-form-error',
    role: 'alert',
    tabindex: '-1',
    hidden: true,
  })
  const controls = {
    name,
    schedule_type: scheduleType,
    schedule,
    timezone,
    prompt,
    command,
    deliver_to: deliverTo,
    timeout,
    overlap,
    notify,
    ping_url: pingUrl,
  }
  const clearErrors = () => {
    errorBox.hidden = true
    errorBox.replaceChildren()
    for (const control of Object.values(controls)) {
      control.removeAttribute('aria-invalid')
      const described = (control.getAttribute('aria-describedby') || '')
        .split(' ')
        .filter((id) => id && id !== errorBox.id)
      if (described.length > 0) control.setAttribute('aria-describedby', described.join(' '))
      else control.removeAttribute('aria-describedby')
    }
  }
  /** Shows the server's refusal above the fields, marks the fields it names, and moves the focus to it. */
  const showError = (error) => {
    const issues = Array.isArray(error.issues) ? error.issues : []
    const fields = new Set(issues.map((issue) => String(issue.path).split('.')[0]))
    const named = error.data?.field || REASON_FIELDS[error.reason]
    if (named) fields.add(named)
    errorBox.replaceChildren(
      h(
        'p',
        {},
        h('strong', {}, editing ? 'Not saved: ' : 'Not created: '),
        error.message || 'the server refused it',
      ),
    )
    for (const field of fields) {
      const control = controls[field]
      if (!control) continue
      control.setAttribute('aria-invalid', 'true')
      const described = (control.getAttribute('aria-describedby') || '').split(' ').filter(Boolean)
      control.setAttribute('aria-describedby', [errorBox.id, ...described].join(' '))
    }
    errorBox.hidden = false
    errorBox.focus()
  }
  const submit = h(
    'button',
    { type: 'submit', 'data-key': 'save-job' },
    editing ? 'Save changes' : 'Create job',
  )
  const value = (control) => /** @type {HTMLInputElement} */ (control).value.trim()

  const onSubmit = async (event) => {
    event.preventDefault()
    clearErrors()
    submit.disabled = true
    try {
      let answer
      if (editing) {
        /** @type {Record<string, unknown>} */
        const changes = {}
        if (value(name) !== job.name) changes.name = value(name)
        if (value(scheduleType) !== job.schedule_type) changes.schedule_type = value(scheduleType)
        if (value(schedule) !== job.schedule) changes.schedule = value(schedule)
        if (value(timezone) !== job.timezone) changes.timezone = value(timezone)
        if (job.kind === 'ai' && value(prompt) !== (job.prompt || '')) changes.prompt = value(prompt)
        if (job.kind === 'shell' && value(command) !== (job.command || '')) changes.command = value(command)
        const deliver = targets(value(deliverTo))
        if (deliver.join(',') !== (job.deliver_to || []).join(',')) changes.deliver_to = deliver
        if (value(timeout) !== durationText(job.timeout_ms) && value(timeout))
          changes.timeout = timeoutText(value(timeout))
        if (value(overlap) !== job.overlap) changes.overlap = value(overlap)
        if (value(notify) !== job.notify) changes.notify = value(notify)
        // '' removes it.
        if (value(pingUrl) !== (job.ping_url || '')) changes.ping_url = value(pingUrl)
        answer = await api(`/api/cron/jobs/${encodeURIComponent(job.id)}`, {
          method: 'PATCH',
          json: changes,
          accept: [400, 404, 422],
        })
      } else {
        const wanted = value(name)
        // POST /api/cron/jobs updates the job of a taken name: the form creates, so it asks first.
        const taken = wanted
          ? await api(`/api/cron/jobs/${encodeURIComponent(wanted)}`, { accept: [404] })
          : null
        if (taken?.job) {
          showError({
            message: `a job named ${wanted} already exists; choose another name, or edit that job`,
            reason: 'CRON_DUPLICATE_NAME',
          })
          return
        }
        /** @type {Record<string, unknown>} */
        const body = {
          kind: kind.value,
          name: wanted,
          schedule_type: value(scheduleType),
          schedule: value(schedule),
        }
        if (value(timezone)) body.timezone = value(timezone)
        if (kind.value === 'ai') body.prompt = value(prompt)
        else body.command = value(command)
        const deliver = targets(value(deliverTo))
        if (deliver.length > 0) body.deliver_to = deliver
        if (value(timeout)) body.timeout = timeoutText(value(timeout))
        if (value(overlap)) body.overlap = value(overlap)
        if (value(notify)) body.notify = value(notify)
        if (value(pingUrl)) body.ping_url = value(pingUrl)
        answer = await api('/api/cron/jobs', { method: 'POST', json: body, accept: [400, 422] })
      }
      if (answer?.error) {
        showError(answer.error)
        return
      }
      const saved = answer.job
      announce(`${editing ? 'Saved' : 'Created'} ${saved.name}`)
      page.go(`#/cron/${encodeURIComponent(saved.id)}`, editing ? `edit:${saved.id}` : undefined)
    } catch (error) {
      if (error instanceof AuthError) page.askForToken(error.message)
      else showError({ message: String(error.message || error) })
    } finally {
      submit.disabled = false
    }
  }

  const form = h(
    'form',
    { className: 'job-form', novalidate: true, 'aria-labelledby': 'job-form-heading', onsubmit: onSubmit },
    errorBox,
    kindField,
    row('Name', name, 'Letters, digits, -, _ or .; unique.'),
    row('Schedule type', scheduleType),
    h('div', { className: 'form-row' }, h('label', { for: schedule.id }, 'Schedule'), schedule, scheduleHint),
    row('Time zone', timezone, 'An IANA zone such as Europe/Berlin; empty for the server’s.'),
    promptRow,
    commandRow,
    row(
      'Deliver to',
      deliverTo,
      'Targets separated by commas, such as telegram:12345; empty for the default.',
    ),
    row('Timeout', timeout, 'How long one run may take: 90s, 10m, 1h30m (a bare number is seconds).'),
    row('Overlap', overlap, 'When a run is due while the previous one still goes.'),
    row('Notify', notify, 'Which runs are delivered to the targets.'),
    row(
      'Ping URL',
      pingUrl,
      'Dead-man monitor: each run requests <url>/start, then <url> or <url>/fail. Empty for none.',
    ),
    h(
      'div',
      { className: 'actions' },
      submit,
      h('a', { href: editing ? `#/cron/${encodeURIComponent(job.id)}` : '#/cron' }, 'Cancel'),
    ),
  )
  if (editing) preview()
  else previewStatus.textContent = 'Type a schedule to see when it fires.'
  return h(
    'section',
    {},
    h(
      'p',
      {},
      editing
        ? h('a', { href: `#/cron/${encodeURIComponent(job.id)}` }, `← ${job.name}`)
        : h('a', { href: '#/cron' }, '← All cron jobs'),
    ),
    h('h1', { id: 'job-form-heading' }, editing ? `Edit ${job.name}` : 'New cron job'),
    h(
      'div',
      { className: 'form-with-preview' },
      form,
      h(
        'section',
        { className: 'preview', 'aria-labelledby': 'preview-heading' },
        h('h2', { id: 'preview-heading' }, 'Preview'),
        previewStatus,
        previewList,
      ),
    ),
  )
}

/**
 * A form redrawn would lose what was typed: it is drawn once per visit (`drawOnce`: no refresh, a
 * reconnect of the event stream or a refresh asked for by the page before reads it again) and
 * `onEvent` takes every event here.
 * @type {View}
 */
export const jobNew = {
  title: 'New cron job',
  drawOnce: true,
  async load() {
    return {}
  },
  render(_data, _route, page) {
    return jobForm(undefined, page)
  },
  onEvent() {
    return true
  },
}

/** @type {View} */
export const jobEdit = {
  title: 'Edit cron job',
  drawOnce: true,
  async load(route) {
    const one = await api(`/api/cron/jobs/${encodeURIComponent(/** @type {string} */ (route.id))}`, {
      accept: [404],
    })
    return { job: one?.job }
  },
  render(data, _route, page) {
    if (!data.job)
      return h(
        'section',
        {},
        heading('Edit cron job'),
        h('p', {}, 'This job no longer exists.'),
        h('a', { href: '#/cron' }, 'Back to all jobs'),
      )
    return jobForm(data.job, page)
  },
  onEvent() {
    return true
  },
}
