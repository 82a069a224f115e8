// A small node:test suite that bwrapkit's workload tests run inside the sandbox.
import { test } from 'node:test';
import assert from 'node:assert/strict';

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

test('sum', () => {
  assert.equal(sum([1, 2, 3]), 6);
  assert.equal(sum([]), 0);
});
