import manifest from '../package.json' with { type: 'json' }

/** This server's version: `@lango/server`'s package.json, inlined at build (the one source). */
export const VERSION: string = manifest.version
