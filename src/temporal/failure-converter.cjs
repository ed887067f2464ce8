// Failure converter of every client and worker (and of the workflow bundle, which loads it by
// path): messages and stack traces travel as an encoded payload, so the payload codec encrypts
// them like any other value.
'use strict';
const { DefaultFailureConverter } = require('@temporalio/common');

exports.failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
