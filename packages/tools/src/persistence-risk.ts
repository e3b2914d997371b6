const SECRET_REFERENCE = /\{\{(?:secret|decrypt)(?:file)?:[^}]+\}\}/

/** True when text names a secret reference (`{{secret:…}}`, `{{decrypt:…}}`, or their `…file:` forms). */
export function mentionsSecret(...texts: ReadonlyArray<unknown>): boolean {
  return texts.some((text) => typeof text === 'string' && SECRET_REFERENCE.test(text))
}
