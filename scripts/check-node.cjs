#!/usr/bin/env node
/**
 * Run first by `npm start`, `npm run dev` and `npm test`: on a Node older than package.json's
 * `engines.node` (the one place the version is written), stop at once with one line naming the
 * version needed and how to get it, instead of npm's engine warning and a failure further on.
 * Plain CommonJS with nothing newer than Node 8 syntax, so that it parses on the old Node it refuses.
 */
'use strict';
const path = require('node:path');

/** The lowest major `engines.node` allows; only the `>=N` form this project writes is understood. */
function requiredMajor(range) {
  const match = /^\s*>=\s*v?(\d+)(?:\.\d+){0,2}\s*$/.exec(String(range));
  if (!match) throw new Error('package.json engines.node must read ">=N", not "' + range + '"');
  return Number(match[1]);
}

/** The line to print when `version` (process.version) is too old for `range`, else undefined. */
function nodeVersionProblem(version, range) {
  const needed = requiredMajor(range);
  const major = Number(/^v?(\d+)/.exec(version)[1]);
  if (major >= needed) return undefined;
  return (
    'This service needs Node ' +
    needed +
    ' or newer, and this is Node ' +
    version +
    ': install Node ' +
    needed +
    ' (https://nodejs.org/en/download, or `nvm install ' +
    needed +
    '`) and run it again.'
  );
}

module.exports = { nodeVersionProblem, requiredMajor };

if (require.main === module) {
  const packageJson = require(path.join(__dirname, '..', 'package.json'));
  const problem = nodeVersionProblem(process.version, packageJson.engines.node);
  if (problem !== undefined) {
    process.stderr.write(problem + '\n');
    process.exit(1);
  }
}
