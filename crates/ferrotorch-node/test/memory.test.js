'use strict'
// Tensors free their memory when JavaScript collects them (Note [Tensor
// memory in V8], Note [Finalizers in the collector]) and at once with
// dispose(): loops that never dispose keep a bounded RSS.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const ft = require('..')

const MB = 2 ** 20
const rss = () => process.memoryUsage().rss

test('1,000,000 tensors of 4 KiB dropped in a synchronous loop: RSS stays under 500 MB', () => {
  let peak = 0
  for (let i = 0; i < 1_000_000; i++) {
    const t = ft.zeros([1024]) // 4 KiB of float32
    if (i % 10_000 === 0) peak = Math.max(peak, rss())
    void t
  }
  assert.ok(peak < 500 * MB, `peak RSS ${(peak / MB).toFixed(0)} MB`)
})

test('100,000 forwards with ImageNet-sized outputs, never disposed: RSS stays under 500 MB', () => {
  const m = ft.jit.load(path.join(__dirname, 'fixtures', 'wide.pt'))
  const x = ft.ones([1, 4])
  let peak = 0
  ft.noGrad(() => {
    for (let i = 0; i < 100_000; i++) {
      const y = m.forward(x) // [1, 1000] float32
      if (i % 5_000 === 0) peak = Math.max(peak, rss())
      void y
    }
  })
  assert.ok(peak < 500 * MB, `peak RSS ${(peak / MB).toFixed(0)} MB`)
})

test('dispose() frees at once', () => {
  // freed blocks go to the allocator's cache (Note [Caching CPU
  // allocator]): each next tensor reuses the disposed one's memory
  // the wrappers stay reachable: only dispose() can free their memory
  const before = rss()
  const kept = []
  for (let i = 0; i < 8; i++) {
    const big = ft.ones([64 * MB]) // 256 MB of float32
    kept.push(big)
    big.dispose()
  }
  const grown = (rss() - before) / MB
  assert.ok(grown < 400, `8 x 256 MB disposed at once grew RSS by ${grown.toFixed(0)} MB`)
  assert.ok(kept.every((t) => t.isDisposed))
})

test('views and data() keep their storage alive after the base is dropped', () => {
  let view, data
  {
    const base = ft.arange(1000, { dtype: 'float32' })
    view = base.narrow(0, 10, 5)
    data = base.data()
    base.dispose() // the wrapper only: the view and the array still hold the storage
  }
  for (let i = 0; i < 20_000; i++) ft.zeros([1024]) // let collections run
  assert.deepEqual(view.toArray(), [10, 11, 12, 13, 14])
  assert.equal(data[999], 999)
})

test('a TypedArray shared with a tensor stays alive while the tensor does', () => {
  let t = ft.fromTypedArray(new Float64Array([1, 2, 3]))
  for (let i = 0; i < 20_000; i++) ft.zeros([1024])
  assert.deepEqual(t.toArray(), [1, 2, 3])
  t = null
})

test('dropped tensors release the TypedArrays they shared', async () => {
  const v8 = require('node:v8')
  const vm = require('node:vm')
  v8.setFlagsFromString('--expose-gc')
  const gc = vm.runInNewContext('gc')
  let collected = 0
  const registry = new FinalizationRegistry(() => { collected++ })
  for (let i = 0; i < 1000; i++) {
    const a = new Float32Array(1024)
    registry.register(a, i)
    ft.fromTypedArray(a) // the tensor holds a reference to `a` until it is collected
  }
  for (let round = 0; round < 5 && collected < 990; round++) {
    gc() // collects the tensors, whose finalizers release the arrays
    await new Promise((resolve) => setImmediate(resolve))
    gc() // collects the arrays
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  // (the last array may still sit in a register of this frame)
  assert.ok(collected >= 990, `${collected} of 1000 arrays collected`)
})
