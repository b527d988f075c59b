/**
 * `--import` for test processes (see .taprc): registers tsx, then a load hook that puts
 * each TypeScript file's text into the source map tsx inlines. tsx leaves
 * `sourcesContent: [null]` unless NODE_V8_COVERAGE is set (c8's switch); tap collects
 * coverage through the inspector instead, and c8 then reads every file run through tsx
 * as one covered line: src/ looked fully covered, or took the figures of whichever
 * process ran the dist/ bundle (http/conditional.ts showed 49.5 %).
 */
import { register } from 'node:module'

await import('tsx')
register('./source-text-hooks.mjs', import.meta.url)
