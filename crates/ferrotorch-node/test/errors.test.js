'use strict'
// Every Rust error is a JavaScript exception of the class a Node user
// expects, with the core's message; no panic reaches Node.
process.env.FERROTORCH_TEST_OPS = '1' // registers the test-only `_test_panic` op at load
const test = require('node:test')
const assert = require('node:assert/strict')
const ft = require('..')

test('wrong argument types are TypeErrors naming the op and argument', () => {
  const t = ft.ones([2])
  assert.throws(() => t.add('x'), { name: 'TypeError', message: "add(): argument 'other' must be Tensor, not str", code: 'FERROTORCH_TYPE' })
  assert.throws(() => t.add({}), TypeError) // a plain object is keyword arguments: none given
  assert.throws(() => t.add(t, { beta: 1 }), { name: 'TypeError', message: /unexpected keyword argument 'beta'/ })
  assert.throws(() => t.add(Symbol('s')), TypeError)
  assert.throws(() => t.add(() => 1), TypeError)
  assert.throws(() => t.add(new Map()), TypeError)
  assert.throws(() => t.add(2n ** 70n), { name: 'TypeError', message: /does not fit in int64/ })
  assert.throws(() => t.view([[1]]), TypeError)
  assert.throws(() => ft.ones([2], { dtype: 'floaty' }), TypeError)
  assert.throws(() => ft.sum(), { name: 'TypeError', message: /missing required argument 'self'/ })
})

test('out-of-range dims and indices are RangeErrors', () => {
  const t = ft.ones([2, 3])
  assert.throws(() => t.sum(5), { name: 'RangeError', message: /Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)/ })
  assert.throws(() => t.select(1, 7), RangeError)
  assert.throws(() => t.index([ft.tensor([5])]), RangeError)
})

test('other mistakes are Errors naming the op, the shapes and the dtypes', () => {
  assert.throws(() => ft.ones([2, 3]).matmul(ft.ones([2, 3])), { name: 'Error', message: /shapes|cannot be multiplied/ })
  assert.throws(() => ft.ones([2]).add(ft.ones([3])), { name: 'Error', message: 'add: The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0' })
  assert.throws(() => ft.ones([3]).view(2), /shape '\[2\]' is invalid for input of size 3/)
})

test('a disposed tensor throws on use, disposing twice is fine', () => {
  const t = ft.ones([4])
  t.dispose()
  t.dispose()
  assert.equal(t.isDisposed, true)
  assert.throws(() => t.shape, /used after dispose/)
  assert.throws(() => t.add(1), /used after dispose/)
  assert.throws(() => ft.ones([1]).add(t), /used after dispose/)
  const u = ft.ones([1])
  if (typeof Symbol.dispose === 'symbol') {
    u[Symbol.dispose]()
    assert.equal(u.isDisposed, true)
  }
})

test('a panic inside an op is an Error naming the op, and Node goes on', () => {
  for (let i = 0; i < 3; i++) {
    assert.throws(() => ft.ops.call('_test_panic', ft.ones([1]), 'deliberate'),
      { name: 'Error', message: /internal error in _test_panic: deliberate/ })
  }
  assert.deepEqual(ft.ones([1]).add(1).toArray(), [2])
})

test('an error inside forwardAsync\'s worker rejects the promise, and Node goes on', async () => {
  // the worker runs under the same guard (Note [Async forward])
  const m = ft.jit.load(require('node:path').join(__dirname, 'fixtures', 'mlp.pt'))
  await assert.rejects(m.forwardAsync(ft.ones([2, 9])), Error)
  assert.deepEqual(ft.ones([1]).mul(3).toArray(), [3])
})

test('no argument list crashes Node: every op called with odd arguments throws or returns', () => {
  const odd = [[], [ft.ones([2, 3])], [ft.ones([0])], [ft.ones([2, 3]), -7], [ft.ones([2]), 1e300],
    [ft.ones([2]), ft.ones([3])], [ft.tensor([1, 2]), 'x'], [null], [ft.ones([2]), [1, -1]], [ft.ones([]), 0, 0]]
  let calls = 0
  for (const op of require('../lib/native')._bindingOps()) {
    if (/^(rand|randn|randint|randperm|normal|bernoulli|uniform|empty|full|zeros|ones|eye|arange|linspace|logspace)/.test(op.name)) continue
    for (const args of odd) {
      calls++
      try { ft[op.name](...args) } catch (e) {
        assert.ok(e instanceof Error, `${op.name}: ${e}`)
        assert.doesNotMatch(e.message, /internal error/, `${op.name}(${args.length} args) panicked: ${e.message}`)
      }
    }
  }
  assert.ok(calls > 2000)
})

test('an External that is no tensor handle is refused, never read as a tensor', () => {
  // another add-on's External reaches us only as an argument; its pointer
  // must never be read as a handle (Note [Tensor handles])
  const ext = require('../lib/native')._foreignExternal()
  const t = ft.ones([1])
  assert.throws(() => t.add(ext), { name: 'TypeError', message: /External that is not a Tensor/ })
  assert.throws(() => ft.mul(ext, t), TypeError)
  const fake = new ft.Tensor(ext)
  assert.throws(() => fake.add(t), TypeError)
  assert.throws(() => fake.shape, TypeError)
  fake.dispose() // not ours: nothing to free
  assert.deepEqual(t.toArray(), [1])
})

test('a number that is no live tensor slot is refused, and a disposed slot is never reused', () => {
  // a Tensor's _h is its slot's index (Note [Tensor handles]): made-up
  // numbers, and objects that merely carry an _h, are not tensors
  const t = ft.ones([1])
  for (const h of [-1, 1.5, 2 ** 40, NaN, 1e6]) {
    const fake = new ft.Tensor(h)
    assert.throws(() => fake.shape, TypeError, `_h = ${h}`)
    assert.throws(() => fake.add(t), TypeError, `_h = ${h}`)
    assert.throws(() => t.add(fake), TypeError, `_h = ${h}`)
    assert.equal(fake.isDisposed, false)
    fake.dispose()
  }
  assert.throws(() => ft.cat([t, { _h: t._h }]), TypeError)
  const d = ft.zeros([2])
  d.dispose()
  assert.ok(d.isDisposed)
  const fresh = Array.from({ length: 100 }, () => ft.ones([1]))
  assert.ok(fresh.every((f) => f._h !== d._h), 'a disposed tensor keeps its slot while its object lives')
  assert.throws(() => d.add(t), /used after dispose/)
  assert.deepEqual(t.add(fresh[99]).toArray(), [2])
})
