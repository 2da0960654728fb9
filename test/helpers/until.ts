// The gateway's tests wait on conditions with the embedded-mongo package's helper: one implementation
// (the package cannot import the root's tests, the root can import the package's).
export { until, UNTIL_TIMEOUT_MS } from '../../packages/embedded-mongo/test/helpers/until.js';
