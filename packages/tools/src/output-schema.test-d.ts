/**
 * Type-level proof of issue 24 item 6: the result views the tools, the HTTP API and the CLI share
 * are exactly the types of the valibot schemas published as the tools' MCP `outputSchema`, so a
 * field added to a view and not to its schema (or the other way round) fails `tsc --noEmit`. The
 * handlers are tied by `defineTool`, which types each handler's result by the tool's `output`.
 */
import * as v from 'valibot'
import { expectTypeOf } from 'vitest'
import {
  cronDeliveryView,
  type cronDeliveryViewSchema,
  cronJobView,
  type cronJobViewSchema,
  cronPreviewView,
  type cronPreviewViewSchema,
  cronRunView,
  type cronRunViewSchema,
  defineTool,
} from './index.js'

expectTypeOf(cronJobView).returns.toEqualTypeOf<v.InferOutput<typeof cronJobViewSchema>>()
expectTypeOf(cronDeliveryView).returns.toEqualTypeOf<v.InferOutput<typeof cronDeliveryViewSchema>>()
expectTypeOf(cronRunView).returns.toEqualTypeOf<v.InferOutput<typeof cronRunViewSchema>>()
expectTypeOf(cronPreviewView).returns.toEqualTypeOf<v.InferOutput<typeof cronPreviewViewSchema>>()

// A handler whose result is not of its `output` type does not compile.
const parameters = v.strictObject({})
const output = v.strictObject({ count: v.number() })
defineTool({
  name: 'probe',
  title: 'Probe',
  description: 'test tool',
  safety: 'safe',
  parameters,
  output,
  // @ts-expect-error: count is a number
  handler: async () => ({ count: 'three' }),
})
// A tool without an output schema does not compile either.
// @ts-expect-error: output is required
defineTool({
  name: 'probe',
  title: 'Probe',
  description: 'test tool',
  safety: 'safe',
  parameters,
  handler: async () => ({}),
})
