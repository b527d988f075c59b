#!/usr/bin/env node
// The CLI is TypeScript run through tsx, like the reference host: no build step.
import { register } from 'tsx/esm/api'
register()
await import('../src/cli/main.ts')
