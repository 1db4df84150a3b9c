'use strict'
// Saved programs from JavaScript: load, forward, forwardAsync, parameters.
// The fixtures are made by test/fixtures/make_fixtures.py.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const ft = require('..')

const fx = (name) => path.join(__dirname, 'fixtures', name)
const expected = JSON.parse(fs.readFileSync(fx('mlp.json'), 'utf8'))

test('a program saved by Python runs from Node with Python\'s output, bit for bit', () => {
  const m = new ft.ScriptModule(fx('mlp.pt'))
  const x = ft.tensor(expected.input)
  const y = ft.noGrad(() => m.forward(x))
  assert.deepEqual(y.toArray().flat().map(Math.fround), expected.output.flat().map(Math.fround))
  assert.deepEqual(m.namedParameters().map(([n]) => n), expected.parameters)
  assert.equal(m.parameters().length, 4)
  assert.deepEqual(m.namedParameters()[0][1].shape, [8, 4])
  assert.match(m.code, /def forward/)
  assert.match(m.graph, /graph\(/)
})

test('jit.load, eval and train return the module and set training', () => {
  const m = ft.jit.load(fx('mlp.pt'))
  assert.equal(m.train(), m)
  assert.equal(m.training, true)
  assert.equal(m.eval(), m)
  assert.equal(m.training, false)
})

test('several inputs and outputs', async () => {
  const m = ft.jit.load(fx('two.pt'))
  const [s, p] = m.forward(ft.tensor([1, 2], { dtype: 'float32' }), ft.tensor([3, 4], { dtype: 'float32' }))
  assert.deepEqual(s.toArray(), [4, 6])
  assert.deepEqual(p.toArray(), [3, 8])
  const [s2] = await m.forwardAsync(ft.tensor([1, 2], { dtype: 'float32' }), ft.tensor([3, 4], { dtype: 'float32' }))
  assert.deepEqual(s2.toArray(), [4, 6])
})

test('forwardAsync gives forward\'s result, and the caller\'s grad mode', async () => {
  const m = ft.jit.load(fx('mlp.pt'))
  const x = ft.tensor(expected.input)
  const sync = m.forward(x).toArray()
  const y = await m.forwardAsync(x)
  assert.deepEqual(y.toArray(), sync)
  assert.equal(y.requiresGrad, true) // parameters require grad, grad mode on
  const z = await ft.noGrad(() => m.forwardAsync(x))
  assert.equal(z.requiresGrad, false)
  // many at once, all correct
  const all = await Promise.all(Array.from({ length: 16 }, () => m.forwardAsync(x)))
  for (const r of all) assert.deepEqual(r.toArray(), sync)
})

test('errors: a bad file, a wrong input, from forward and forwardAsync', async () => {
  assert.throws(() => new ft.ScriptModule(fx('nope.pt')), /nope\.pt|No such file/)
  const junk = path.join(os.tmpdir(), `ferrotorch-junk-${process.pid}.pt`)
  fs.writeFileSync(junk, Buffer.from('PK\u0003\u0004 not really a zip archive'))
  assert.throws(() => new ft.ScriptModule(junk), Error)
  fs.unlinkSync(junk)
  const m = ft.jit.load(fx('mlp.pt'))
  assert.throws(() => m.forward(ft.ones([2, 5])), /addmm: shapes \[2, 5\] and \[4, 8\] cannot be multiplied/)
  assert.throws(() => m.forward(3), TypeError)
  await assert.rejects(m.forwardAsync(ft.ones([2, 5])), (e) => e instanceof Error && /addmm: shapes \[2, 5\]/.test(e.message))
  await assert.rejects(m.forwardAsync('x'), TypeError)
})

test('jit.optimizeForInference: eval mode, a frozen copy with the same output', () => {
  const m = ft.jit.load(fx('mlp.pt')).train()
  const o = ft.jit.optimizeForInference(m)
  assert.equal(m.training, false) // torch calls mod.eval() first
  assert.equal(o.training, false)
  assert.ok(o instanceof ft.ScriptModule)
  assert.deepEqual(o.namedParameters(), []) // parameters are constants now
  assert.doesNotMatch(o.graph, /prim::GetAttr/)
  const x = ft.tensor(expected.input)
  const y = ft.noGrad(() => o.forward(x)).toArray().flat()
  const want = expected.output.flat()
  assert.equal(y.length, want.length)
  y.forEach((v, i) => assert.ok(Math.abs(v - want[i]) < 1e-6, `${v} vs ${want[i]} at ${i}`))
  assert.throws(() => ft.jit.optimizeForInference({}), { name: 'TypeError', message: /expects a ScriptModule/ })
})
