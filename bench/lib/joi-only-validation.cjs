'use strict';
// Preloaded into a bench ingress (NODE_OPTIONS=--require ...) by bench/plain-check.ts: validate()
// becomes validateWithJoi(), so that ingress validates every body with joi alone. The compiled
// callers read `validate` from the module's exports at each call, so replacing the export reaches
// them all. Not a setting of the service: only this bench loads it.
const path = require('node:path');

const validation = require(path.resolve(__dirname, '../../dist/shared/validation.js'));
let announced = false;
validation.validate = function validateWithoutPlainCheck(schema, value) {
  if (!announced) {
    announced = true;
    process.stderr.write('[bench] joi-only validation in use\n');
  }
  return validation.validateWithJoi(schema, value);
};
