#!/usr/bin/env node
// `epx-bsp pull|push|status|realise|sites|events`: see `epx-bsp --help`.
import { main } from '../dist/cli.js'

await main()
