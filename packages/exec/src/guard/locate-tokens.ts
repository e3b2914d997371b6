import type { SyntaxNode } from 'unbash'
import { forEachChild, parse } from 'unbash'
import { findBashEvaluation } from './bash-evaluation.js'
import { type CodeRegion, findCodeRegions } from './nested-code.js'

/**
 * Which kind of reference a token is: `{{secret:NAME}}` and `{{decrypt:ID}}` stand for the value;
 * `{{secretfile:NAME}}` and `{{decryptfile:ID}}` for the path of a private file holding it.
 */
export type RefTokenKind = 'secret' | 'decrypt' | 'secretfile' | 'decryptfile'

/**
 * Where a reference token sits, as bash reads the command (SECURITY.md SEC-2):
 * - `unquoted`: plain word text, also inside `$(…)` or `` `…` `` → becomes `"${VAR}"`;
 * - `double-quoted`: inside `"…"` or `$"…"` → becomes `${VAR}`;
 * - `heredoc`: a here-document body with an unquoted delimiter → becomes `${VAR}`;
 * - `single-quoted`, `ansi-c` (`$'…'`), `quoted-heredoc`: the shell would not expand a variable
 *   there, so resolving must fail closed;
 * - `comment`: after `#`; never run.
 */
export type RefTokenContext =
  | 'unquoted'
  | 'double-quoted'
  | 'single-quoted'
  | 'ansi-c'
  | 'quoted-heredoc'
  | 'heredoc'
  | 'comment'

/** One `{{secret:NAME}}` or `{{decrypt:ID}}` token in a command. */
export interface RefTokenLocation {
  /** Offset of the first `{` (UTF-16 code units). */
  readonly start: number
  /** Offset just past the last `}`. */
  readonly end: number
  /** The token as written, e.g. `{{secret:api-key}}` (for the file kinds, `{{secret:…}}` is the RefStore key). */
  readonly text: string
  readonly kind: RefTokenKind
  /** The part after the colon, e.g. `api-key`. */
  readonly name: string
  readonly context: RefTokenContext
  /**
   * Set when the token sits in text that a second parser reads again as code: a nested shell
   * (`sh -c "…"`, `| sh`, a here-document fed to a shell), `eval`, `source`, `ssh`, or an
   * interpreter's inline program (`python3 -c`, `node -e`, awk and sed scripts). Names that
   * program as written (`sh`, `eval`, `python3` …). A value expanded there would be parsed as code.
   * Also set, naming the context (`bash arithmetic`, `bash [[ ]]`, `bash read` …) with
   * {@link RefTokenLocation.evaluatedByBash}, where bash evaluates the value as a name or as
   * arithmetic (see {@link findBashEvaluation}).
   */
  readonly reparsedBy?: string
  /**
   * Set (with `reparsedBy`) when the second parser is bash's own evaluation of names and
   * arithmetic: `$(( ))`, `(( ))`, `[[ ]]`, `let`, `declare -i`, `read NAME` and the like, or a
   * command holding one of them anywhere (the value may reach it through a variable). Under bash
   * (`/bin/sh` on macOS, Fedora, Arch) a value such as `a[$(touch /tmp/F)]` runs its command
   * substitution there, even as a quoted expansion.
   */
  readonly evaluatedByBash?: true
}

/** Result of {@link rewriteRefTokens}. */
export interface RewriteRefTokensResult {
  /** The command with each token replaced as `replacementFor` asked. */
  readonly command: string
  /** Tokens that were replaced, in order. */
  readonly replaced: readonly RefTokenLocation[]
  /**
   * Tokens to be replaced by a variable that sit where the shell would not expand one (single
   * quotes, `$'…'`, a quoted here-document), and any token that spans a quote boundary. They are
   * left as written; a caller resolving secrets must refuse the command when this is not empty.
   */
  readonly unresolvedInQuotes: readonly RefTokenLocation[]
  /**
   * Tokens to be replaced by a variable that a nested shell or interpreter would parse again
   * (see {@link RefTokenLocation.reparsedBy}). Left as written; a caller must refuse the command.
   */
  readonly reparsed: readonly RefTokenLocation[]
}

const TOKEN = /\{\{(secret|decrypt|secretfile|decryptfile):([^}]+)\}\}/g

/** Contexts where `${VAR}` would stay literal text. */
const NON_EXPANDING: ReadonlySet<RefTokenContext> = new Set(['single-quoted', 'ansi-c', 'quoted-heredoc'])

const STRICTNESS: Readonly<Record<RefTokenContext, number>> = {
  comment: 0,
  unquoted: 1,
  'double-quoted': 2,
  heredoc: 2,
  'single-quoted': 3,
  'ansi-c': 3,
  'quoted-heredoc': 3,
}

interface Span {
  readonly start: number
  readonly end: number
  readonly context: RefTokenContext
  readonly depth: number
  /** Set for `` `…` `` holding escaped backticks: the parser reads its decoded text separately. */
  readonly decoded?: string
}

/** Why a token's value would be parsed again, as {@link RefTokenLocation} records it. */
type Reparse = Pick<RefTokenLocation, 'reparsedBy' | 'evaluatedByBash'>

/** A located token with what a rewrite needs to know beyond {@link RefTokenLocation}. */
interface LocatedRefToken {
  readonly location: RefTokenLocation
  /** The token crosses a quoting boundary, so replacing it would change the quoting around it. */
  readonly straddles: boolean
}

/**
 * Finds every `{{secret:NAME}}` and `{{decrypt:ID}}` token in a command and the quoting context bash
 * gives it, using the guard's parser (unbash) and its node positions. Pure.
 *
 * @example
 * locateRefTokens('curl -H "Auth: {{secret:k}}" x')[0]?.context // 'double-quoted'
 */
export function locateRefTokens(command: string): RefTokenLocation[] {
  return locate(command).map((located) => located.location)
}

/**
 * What replaces a token in {@link rewriteRefTokens}: a shell variable name (the token becomes an
 * expansion of it), or `{ literal }`, inert text (letters, digits and `/_.+-` only, such as the path
 * of a private file) spliced in place as written.
 */
export type RefTokenReplacement = string | { readonly literal: string }

/**
 * Replaces each token for which `replacementFor` returns something. A variable name becomes
 * `"${NAME}"` when unquoted, `${NAME}` inside double quotes or an unquoted here-document; it is left
 * as written and reported where the shell would not expand a variable (`unresolvedInQuotes`) or
 * where a nested shell or interpreter would parse the value again (`reparsed`). A literal is inert
 * wherever it sits, so it replaces the token in any context except one that straddles quotes.
 * Tokens for which it returns `undefined`, and tokens in comments, stay as written. Pure.
 *
 * @throws TypeError when `replacementFor` returns a bad variable name or a literal that is not inert.
 */
export function rewriteRefTokens(
  command: string,
  replacementFor: (location: RefTokenLocation) => RefTokenReplacement | undefined,
): RewriteRefTokensResult {
  const replaced: RefTokenLocation[] = []
  const unresolvedInQuotes: RefTokenLocation[] = []
  const reparsed: RefTokenLocation[] = []
  let output = ''
  let copied = 0
  for (const { location, straddles } of locate(command)) {
    if (location.context === 'comment') continue
    const replacement = replacementFor(location)
    if (replacement === undefined) continue
    let text: string
    if (typeof replacement === 'string') {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(replacement))
        throw new TypeError('rewriteRefTokens: a replacement must be a shell variable name or { literal }')
      if (location.reparsedBy !== undefined) {
        reparsed.push(location)
        continue
      }
      if (NON_EXPANDING.has(location.context) || straddles) {
        unresolvedInQuotes.push(location)
        continue
      }
      text = location.context === 'unquoted' ? `"\${${replacement}}"` : `\${${replacement}}`
    } else {
      if (!/^[A-Za-z0-9/_.+-]*$/.test(replacement.literal))
        throw new TypeError('rewriteRefTokens: a literal may hold only letters, digits and / _ . + -')
      if (straddles) {
        unresolvedInQuotes.push(location)
        continue
      }
      text = replacement.literal
    }
    output += command.slice(copied, location.start) + text
    copied = location.end
    replaced.push(location)
  }
  return { command: output + command.slice(copied), replaced, unresolvedInQuotes, reparsed }
}

/** Like {@link locateRefTokens}, with whether each token straddles a quoting boundary. */
function locate(command: string): LocatedRefToken[] {
  const matches = [...command.matchAll(TOKEN)]
  if (matches.length === 0) return []
  const tokenStarts = matches.map((match) => match.index)
  const tokenEnds = matches.map((match) => match.index + match[0].length)
  const spans: Span[] = []
  const script = parse(command)
  collectSpans(script, 'unquoted', 0, spans, (start, end) =>
    overlapsToken(tokenStarts, tokenEnds, start, end),
  )
  const regions = findCodeRegions(script)
  const evaluation = findBashEvaluation(script)
  const located: LocatedRefToken[] = []
  for (const match of matches) {
    const start = match.index
    const end = start + match[0].length
    const first = deepestSpan(spans, start)
    let context: RefTokenContext
    let straddles = false
    const overlaps = (region: CodeRegion) => region.start < end && start < region.end
    let reparsed: Reparse | undefined
    const codeRegion = regions.find(overlaps)
    if (codeRegion !== undefined) reparsed = { reparsedBy: codeRegion.by }
    if (first?.decoded !== undefined && end <= first.end) {
      const decoded = decodedContext(command, first, start)
      context = decoded.context
      reparsed ??= decoded.reparsed
    } else {
      // The strictest context over the token's characters: `{{secret:'k'}}` counts as single-quoted.
      const seen = new Set<RefTokenContext>()
      for (let position = start; position < end; position++) {
        const span = position === start ? first : deepestSpan(spans, position)
        seen.add(span === undefined ? uncoveredContext(command, spans, position) : span.context)
      }
      context = [...seen].reduce((strictest, next) =>
        STRICTNESS[next] > STRICTNESS[strictest] ? next : strictest,
      )
      straddles = seen.size > 1 || /['"\\$`()]/.test(match[0])
    }
    // Bash's own evaluation: a name or arithmetic word, or anywhere in a command that evaluates.
    const evaluatedBy = evaluation.regions.find(overlaps)?.by ?? evaluation.everywhere
    if (evaluatedBy !== undefined) reparsed ??= { reparsedBy: evaluatedBy, evaluatedByBash: true }
    const location: RefTokenLocation = {
      start,
      end,
      text: match[0],
      kind: match[1] as RefTokenKind,
      name: match[2] as string,
      context,
    }
    located.push({ location: reparsed === undefined ? location : { ...location, ...reparsed }, straddles })
  }
  return located
}

function overlapsToken(
  starts: readonly number[],
  ends: readonly number[],
  start: number,
  end: number,
): boolean {
  // Tokens do not overlap, so their ends are sorted too: find the first one ending after `start`.
  let low = 0
  let high = ends.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if ((ends[middle] as number) <= start) low = middle + 1
    else high = middle
  }
  return low < starts.length && (starts[low] as number) < end
}

/**
 * Records the quoting context of every word and word part that overlaps a token. Statements and
 * commands are always descended because here-document bodies lie outside their ranges.
 */
function collectSpans(
  node: SyntaxNode,
  context: RefTokenContext,
  depth: number,
  spans: Span[],
  relevant: (start: number, end: number) => boolean,
): void {
  const push = (span: RefTokenContext): void => {
    spans.push({ start: node.pos, end: node.end, context: span, depth })
  }
  const children = (inner: RefTokenContext): void => {
    forEachChild(node, (child) => collectSpans(child, inner, depth + 1, spans, relevant))
  }
  switch (node.type) {
    case 'Word':
    case 'Literal':
    case 'ParameterExpansion':
    case 'ArithmeticExpansion':
    case 'Glob':
    case 'ExtendedGlob':
    case 'BraceExpansion':
      if (!relevant(node.pos, node.end)) return
      push(context)
      children(context)
      return
    case 'SingleQuoted':
      if (relevant(node.pos, node.end)) push('single-quoted')
      return
    case 'AnsiCQuoted':
      if (relevant(node.pos, node.end)) push('ansi-c')
      return
    case 'DoubleQuoted':
    case 'LocaleString':
      if (!relevant(node.pos, node.end)) return
      push('double-quoted')
      children('double-quoted')
      return
    case 'CommandExpansion':
    case 'ProcessSubstitution':
    case 'ArithmeticCommandExpansion': {
      if (!relevant(node.pos, node.end)) return
      push(context)
      const source = node.script?.source
      if (source !== undefined) {
        // Positions inside index the decoded text: classify that text on its own (see decodedContext).
        spans.push({ start: node.pos, end: node.end, context: 'unquoted', depth: depth + 1, decoded: source })
        return
      }
      // Quoting starts afresh inside a substitution, even within double quotes.
      children('unquoted')
      return
    }
    case 'HereDoc':
      collectSpans(
        node.body,
        node.delimiter?.quoted === true ? 'quoted-heredoc' : 'heredoc',
        depth + 1,
        spans,
        relevant,
      )
      return
    case 'HereDocBody':
      push(context)
      children(context)
      return
    default:
      children(context)
  }
}

function deepestSpan(spans: readonly Span[], position: number): Span | undefined {
  let best: Span | undefined
  for (const span of spans) {
    if (span.start <= position && position < span.end && (best === undefined || span.depth >= best.depth))
      best = span
  }
  return best
}

/** A position outside every word: a comment when an unquoted `#` starts a word earlier on its line. */
function uncoveredContext(command: string, spans: readonly Span[], position: number): RefTokenContext {
  const lineStart = command.lastIndexOf('\n', position - 1) + 1
  for (let index = position - 1; index >= lineStart; index--) {
    if (command[index] !== '#') continue
    const before = command[index - 1]
    if (
      (before === undefined || index === lineStart || /[\s;&|()<>]/.test(before)) &&
      !deepestSpan(spans, index)
    ) {
      return 'comment'
    }
  }
  return 'unquoted'
}

/**
 * Context of a token inside `` `…` `` with escaped backticks: locate the tokens of the decoded text
 * and pair them with the original ones in order (decoding only drops backslashes, which a matched
 * token cannot hold). If the counts differ, answer `single-quoted` so the caller fails closed.
 */
function decodedContext(
  command: string,
  span: Span,
  start: number,
): { context: RefTokenContext; reparsed?: Reparse } {
  const inner = locate(span.decoded ?? '')
  const outer = [...command.slice(span.start, span.end).matchAll(TOKEN)].map(
    (match) => span.start + match.index,
  )
  const index = outer.indexOf(start)
  const match = inner[index]
  if (inner.length !== outer.length || match === undefined || match.straddles)
    return { context: 'single-quoted' }
  const { context, reparsedBy, evaluatedByBash } = match.location
  if (reparsedBy === undefined) return { context }
  return { context, reparsed: evaluatedByBash === true ? { reparsedBy, evaluatedByBash } : { reparsedBy } }
}
