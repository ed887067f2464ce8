// Workers killed again and again while a throttled batch of compact rows sends: see
// kills-unknown.ts.
import { killsUnknownTest } from './kills-unknown.js';

killsUnknownTest('compact rows', true);
