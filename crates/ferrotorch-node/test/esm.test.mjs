// The ES module entry: named exports for every function, and the default.
import test from 'node:test'
import assert from 'node:assert/strict'
import ft, { ones, Tensor, logSoftmax, log_softmax, ScriptModule, noGrad, tensor } from '../index.mjs'

test('named and default exports are the CommonJS ones', () => {
  const t = ones([2, 2])
  assert.ok(t instanceof Tensor)
  assert.equal(ft.ones, ones)
  assert.equal(logSoftmax, log_softmax)
  assert.equal(typeof ScriptModule, 'function')
  assert.equal(noGrad(() => tensor([1.5]).mul(2).item()), 3)
})
