#!/usr/bin/env node
// The `scores` CLI: builds on first use, then runs the compiled command line.
import { buildIfNeeded } from '../scripts/build-if-needed.mjs';

buildIfNeeded();
await import('../dist/src/app/cli/bin.js');
