'use strict'
// Tensors from JavaScript: creation, dtypes, printing, memory sharing,
// views and in-place ops, every op generated from the schemas.
const test = require('node:test')
const assert = require('node:assert/strict')
const ft = require('..')

const close = (a, b, tol = 1e-6) => {
  assert.equal(a.length, b.length)
  a.forEach((x, i) => assert.ok(Math.abs(x - b[i]) <= tol, `${x} != ${b[i]} at ${i}`))
}

test('creation functions follow torch (values, shapes, dtypes)', () => {
  assert.deepEqual(ft.ones([2, 3]).toArray(), [[1, 1, 1], [1, 1, 1]])
  assert.deepEqual(ft.zeros(2, 2).toArray(), [[0, 0], [0, 0]])
  assert.deepEqual(ft.full([2], 7).toArray(), [7, 7])
  assert.deepEqual(ft.arange(5).toArray(), [0, 1, 2, 3, 4])
  assert.equal(ft.arange(5).dtype, 'int64')
  assert.deepEqual(ft.arange(1, 2, 0.25).toArray(), [1, 1.25, 1.5, 1.75])
  close(ft.linspace(0, 1, 5).toArray(), [0, 0.25, 0.5, 0.75, 1])
  assert.deepEqual(ft.eye(2).toArray(), [[1, 0], [0, 1]])
  assert.equal(ft.ones([2], { dtype: 'float64' }).dtype, 'float64')
  assert.equal(ft.zeros([1], { dtype: ft.int32 }).dtype, 'int32')
  const r = ft.randint(0, 10, [1000])
  assert.equal(r.dtype, 'int64')
  assert.ok(r.toArray().every((v) => v >= 0 && v < 10 && Number.isInteger(v)))
  const u = ft.rand([1000]).toArray()
  assert.ok(u.every((v) => v >= 0 && v < 1))
  const n = ft.randn([20000])
  assert.ok(Math.abs(n.mean().item()) < 0.05 && Math.abs(n.std().item() - 1) < 0.05)
})

test('manualSeed makes random tensors repeatable', () => {
  ft.manualSeed(42)
  const a = ft.randn([5]).toArray()
  ft.manualSeed(42)
  assert.deepEqual(ft.randn([5]).toArray(), a)
})

test('requiresGrad by option and by the seeds/000 positional flag', () => {
  assert.equal(ft.ones([2], true).requiresGrad, true)
  assert.equal(ft.ones([2], false).requiresGrad, false)
  assert.equal(ft.zeros([2], { requiresGrad: true }).requiresGrad, true)
  assert.equal(ft.tensor([1.5], { requiresGrad: true }).requiresGrad, true)
})

test('tensor() infers dtypes as torch does and takes every TypedArray', () => {
  assert.equal(ft.tensor([1, 2]).dtype, 'int64')
  assert.equal(ft.tensor([1, 2.5]).dtype, 'float32')
  assert.equal(ft.tensor([true, false]).dtype, 'bool')
  assert.equal(ft.tensor([1n, 2n]).dtype, 'int64')
  assert.deepEqual(ft.tensor([[1, 2], [3, 4]]).shape, [2, 2])
  assert.throws(() => ft.tensor([[1, 2], [3]]), RangeError)
  const cases = [
    [new Float32Array([1, 2]), 'float32', Float32Array],
    [new Float64Array([1, 2]), 'float64', Float64Array],
    [new Int32Array([1, 2]), 'int32', Int32Array],
    [new BigInt64Array([1n, 2n]), 'int64', BigInt64Array],
    [new Int16Array([1, 2]), 'int16', Int16Array],
    [new Int8Array([1, 2]), 'int8', Int8Array],
    [new Uint8Array([1, 2]), 'uint8', Uint8Array]
  ]
  for (const [arr, dtype, Cls] of cases) {
    const t = ft.tensor(arr)
    assert.equal(t.dtype, dtype)
    const d = t.data()
    assert.ok(d instanceof Cls, `${dtype}: ${d.constructor.name}`)
    assert.deepEqual(Array.from(d), Array.from(arr))
  }
  const b = ft.tensor([true, false, true])
  assert.ok(b.data() instanceof Uint8Array)
  assert.deepEqual(Array.from(b.data()), [1, 0, 1])
  assert.deepEqual(b.toArray(), [true, false, true])
  // int64 beyond 2^53 is exact through BigInt64Array
  const big = ft.tensor([9007199254740993n])
  assert.equal(big.data()[0], 9007199254740993n)
  assert.equal(ft.tensor([1, 2], { dtype: 'float64' }).dtype, 'float64')
  assert.equal(ft.tensor([1, 2], { dtype: 'float16' }).dtype, 'float16')
})

test('fromTypedArray shares memory both ways', () => {
  const arr = new Float32Array([1, 2, 3, 4, 5, 6])
  const t = ft.fromTypedArray(arr, [2, 3])
  assert.deepEqual(t.shape, [2, 3])
  arr[0] = 10 // a JS write is seen by the tensor
  assert.equal(t.toArray()[0][0], 10)
  t.mul_(2) // a tensor write is seen by the array
  assert.deepEqual(Array.from(arr), [20, 4, 6, 8, 10, 12])
  // the reverse: data() of a contiguous tensor is a view
  const d = t.data()
  d[1] = -1
  assert.equal(t.toArray()[0][1], -1)
  t.add_(1)
  assert.equal(d[1], 0)
  // views of views share too
  const row = t.select(0, 1)
  row.zero_()
  assert.deepEqual(Array.from(arr.subarray(3)), [0, 0, 0])
  // a subarray with an offset works and is shared
  const sub = ft.fromTypedArray(arr.subarray(2, 4))
  sub.fill_(5)
  assert.deepEqual(Array.from(arr), [21, 0, 5, 5, 0, 0])
  // bool from Uint8Array is checked
  assert.equal(ft.fromTypedArray(new Uint8Array([0, 1]), [2], { dtype: 'bool' }).dtype, 'bool')
  assert.throws(() => ft.fromTypedArray(new Uint8Array([0, 2]), [2], { dtype: 'bool' }))
  assert.throws(() => ft.fromTypedArray(arr, [4, 4]), /invalid for an array of 6/)
  assert.throws(() => ft.fromTypedArray(new Uint32Array(2)), TypeError)
  assert.throws(() => ft.fromTypedArray([1, 2]), TypeError)
  // copy: true does not share
  const c = ft.fromTypedArray(arr, [6], { copy: true })
  c.zero_()
  assert.equal(arr[2], 5)
})

test('data() of a non-contiguous tensor is a row-major copy', () => {
  const t = ft.arange(6, { dtype: 'float32' }).view(2, 3)
  const tt = t.t()
  assert.equal(tt.isContiguous(), false)
  assert.deepEqual(Array.from(tt.data()), [0, 3, 1, 4, 2, 5])
})

test('printing matches torch', () => {
  assert.equal(ft.ones([2, 3]).toString(), 'tensor([[1., 1., 1.],\n        [1., 1., 1.]])')
  assert.equal(ft.tensor([1, 2]).toString(), 'tensor([1, 2])')
  assert.equal(ft.tensor([0.5, 2]).mul(2).toString(), 'tensor([1., 4.])')
  assert.equal(ft.ones([2], true).toString(), 'tensor([1., 1.], requires_grad=True)')
  assert.equal(ft.ones([2], true).mul(2).toString(), 'tensor([2., 2.], grad_fn=<MulBackward0>)')
  assert.equal(String(ft.tensor([true])), 'tensor([True])')
  assert.equal(require('node:util').inspect(ft.tensor([1.5])), 'tensor([1.5000])')
})

test('item, toArray, shape, dtype, device, ndim, numel', () => {
  const t = ft.tensor([[1.5, 2], [3, 4]])
  assert.equal(t.sum().item(), 10.5)
  assert.equal(ft.tensor([true]).item(), true)
  assert.deepEqual(t.shape, [2, 2])
  assert.equal(t.device, 'cpu')
  assert.equal(t.ndim, 2)
  assert.equal(t.numel(), 4)
  assert.deepEqual(t.stride(), [2, 1])
  assert.throws(() => t.item(), /a Tensor with 4 elements cannot be converted to Scalar/)
})

test('ops as methods and functions, with torch keyword arguments', () => {
  const a = ft.tensor([[1, 2], [3, 4]], { dtype: 'float32' })
  const b = ft.tensor([[10, 20], [30, 40]], { dtype: 'float32' })
  assert.deepEqual(a.add(b, { alpha: 2 }).toArray(), [[21, 42], [63, 84]])
  assert.deepEqual(ft.add(a, b).toArray(), [[11, 22], [33, 44]])
  assert.deepEqual(ft.sum(a, { dim: [1], keepdim: true }).toArray(), [[3], [7]])
  assert.deepEqual(a.sum(0).toArray(), [4, 6])
  assert.deepEqual(a.matmul(b).toArray(), [[70, 100], [150, 220]])
  close(a.logSoftmax(1).toArray().flat(), a.log_softmax(1).toArray().flat())
  close(ft.softmax(a, 1).toArray()[0], [1 / (1 + Math.E), Math.E / (1 + Math.E)])
  assert.deepEqual(a.view(4).toArray(), [1, 2, 3, 4])
  assert.deepEqual(a.permute(1, 0).toArray(), [[1, 3], [2, 4]])
  assert.deepEqual(a.reshape([1, 4]).shape, [1, 4])
  // named results
  const m = a.max({ dim: 1 })
  assert.deepEqual(m.values.toArray(), [2, 4])
  assert.deepEqual(m.indices.toArray(), [1, 1])
  const [vals, idx] = a.max(0)
  assert.deepEqual([vals.toArray(), idx.toArray()], [[3, 4], [1, 1]])
  // dtype options by name
  assert.equal(a.to({ dtype: 'float64' }).dtype, 'float64')
  assert.equal(a.sum({ dtype: 'float64' }).dtype, 'float64')
  // camelCase option keys
  assert.deepEqual(a.sum({ dim: [0], keepdim: true }).shape, [1, 2])
})

test('indexing through select, narrow and index; views share memory', () => {
  const t = ft.arange(12, { dtype: 'float32' }).view(3, 4)
  assert.deepEqual(t.select(0, 1).toArray(), [4, 5, 6, 7])
  assert.deepEqual(t.narrow(1, 1, 2).toArray(), [[1, 2], [5, 6], [9, 10]])
  assert.deepEqual(t.index([ft.tensor([2, 0])]).toArray(), [[8, 9, 10, 11], [0, 1, 2, 3]])
  const v = t.narrow(0, 0, 1)
  v.fill_(-1)
  assert.deepEqual(t.select(0, 0).toArray(), [-1, -1, -1, -1])
  assert.throws(() => t.select(0, 3), RangeError)
})

test('ops returning lists of tensors give Tensors', () => {
  const parts = ft.arange(6, { dtype: 'float32' }).chunk(3)
  assert.equal(parts.length, 3)
  for (const p of parts) assert.ok(p instanceof ft.Tensor)
  assert.deepEqual(parts.map((p) => p.toArray()), [[0, 1], [2, 3], [4, 5]])
  const [a, b] = ft.ones([2, 2]).unbind(0)
  assert.deepEqual(a.add(b).toArray(), [2, 2])
  assert.equal(typeof parts[0]._h, 'number') // a slot index, not a nested Tensor
})

test('in-place ops return the same object', () => {
  const t = ft.ones([2])
  assert.equal(t.add_(1), t)
  assert.equal(t.mul_(3), t)
  assert.equal(ft.zero_(t), t)
  assert.deepEqual(t.toArray(), [0, 0])
})

test('every public op of the dispatcher is a function, and a method where torch has one', () => {
  const ops = require('../lib/native')._bindingOps()
  assert.ok(ops.length > 250, `${ops.length}`)
  for (const op of ops) {
    assert.equal(typeof ft[op.name], 'function', op.name)
    if (op.isMethod) assert.equal(typeof ft.Tensor.prototype[op.name], 'function', op.name)
  }
  assert.equal(typeof ft.logSoftmax, 'function')
  assert.equal(typeof ft.Tensor.prototype.maskedFill_, 'function')
  // ops.call reaches any op by its full name
  assert.deepEqual(ft.ops.call('add', ft.ones([1]), ft.ones([1]), { alpha: 3 }).toArray(), [4])
})

test('works inside a worker thread, beside the main thread', async () => {
  const { Worker } = require('node:worker_threads')
  const index = JSON.stringify(require('node:path').join(__dirname, '..'))
  const code = `
    const ft = require(${index})
    const { parentPort } = require('node:worker_threads')
    let total = 0
    for (let i = 0; i < 2000; i++) total += ft.fromTypedArray(new Float32Array([1, 2, 3])).mul(2).sum().item()
    parentPort.postMessage(total)`
  const w = new Worker(code, { eval: true })
  const got = await new Promise((resolve, reject) => { w.on('message', resolve); w.on('error', reject) })
  assert.equal(got, 24000)
  assert.deepEqual(ft.ones([2]).add(1).toArray(), [2, 2])
})

test('complex dtypes by name; complex32 data is float16 bit pairs', () => {
  const z = ft.zeros([2], { dtype: ft.chalf })
  assert.equal(z.dtype, 'complex32')
  const c = ft.ones([3], { dtype: 'complex64' })
  assert.equal(c.dtype, 'complex64')
  // (re, im) pairs: 1 + 0i three times
  assert.deepEqual(Array.from(c.data()), [1, 0, 1, 0, 1, 0])
  const h = ft.ones([2], { dtype: 'complex32' }).data()
  assert.ok(h instanceof Uint16Array)
  // float16 1.0 is 0x3c00
  assert.deepEqual(Array.from(h), [0x3c00, 0, 0x3c00, 0])
  assert.equal(ft.ones([1], { dtype: ft.cdouble }).dtype, 'complex128')
})

test('where(condition) alone gives the indices per dimension, as torch.where does', () => {
  const c = ft.tensor([[1, 0], [0, 1]])
  const idx = ft.where(c)
  assert.equal(idx.length, 2)
  assert.deepEqual(idx.map((t) => Array.from(t.data(), Number)), [[0, 1], [0, 1]])
  assert.equal(idx[0].dtype, 'int64')
  // the three-argument form is unchanged
  assert.deepEqual(Array.from(ft.where(c.gt(0), c, ft.tensor([[5, 5], [5, 5]])).data(), Number), [1, 5, 5, 1])
})
