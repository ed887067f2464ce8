// Workers killed again and again while a throttled batch of rows as workflows sends: see
// kills-unknown.ts.
import { killsUnknownTest } from './kills-unknown.js';

killsUnknownTest('rows as workflows', false);
