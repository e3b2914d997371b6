const SECRET_REFERENCE = /\{\{(?:secret|decrypt):[^}]+\}\}/

/** True when text names a secret reference (`{{secret:…}}` / `{{decrypt:…}}`). */
export function mentionsSecret(...texts: ReadonlyArray<unknown>): boolean {
  return texts.some((text) => typeof text === 'string' && SECRET_REFERENCE.test(text))
}
