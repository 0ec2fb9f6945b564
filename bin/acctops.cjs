#!/usr/bin/env node
// The `bin` of package.json: runs the TypeScript CLI on Node 20 straight from `npm ci`, with no
// build step, by registering tsx's CommonJS loader (tsx is a runtime dependency) first.
'use strict';
require('tsx/cjs/api').register();
require('./acctops.ts');
