'use strict'
// Autograd from JavaScript: backward, grad, noGrad, against analytic
// derivatives and central differences.
const test = require('node:test')
const assert = require('node:assert/strict')
const ft = require('..')

const close = (a, b, tol) => a.forEach((x, i) => assert.ok(Math.abs(x - b[i]) <= tol, `${x} vs ${b[i]} at ${i}`))

test('backward accumulates analytic gradients', () => {
  const x = ft.tensor([1, 2, 3], { dtype: 'float64', requiresGrad: true })
  const y = x.pow(3).sum() // dy/dx = 3x^2
  y.backward()
  close(x.grad.toArray(), [3, 12, 27], 1e-12)
  x.pow(2).sum().backward() // accumulates 2x
  close(x.grad.toArray(), [5, 16, 33], 1e-12)
  x.grad = null
  assert.equal(x.grad, null)
  assert.equal(x.isLeaf, true)
  assert.equal(y.isLeaf, false)
})

test('backward with a gradient for a non-scalar output, and retainGraph', () => {
  const x = ft.tensor([[1, 2], [3, 4]], { dtype: 'float64', requiresGrad: true })
  const y = x.mul(x)
  y.backward(ft.ones([2, 2], { dtype: 'float64' }), { retainGraph: true })
  y.backward(ft.ones([2, 2], { dtype: 'float64' }))
  assert.deepEqual(x.grad.toArray(), [[4, 8], [12, 16]])
  assert.throws(() => y.backward(ft.ones([2, 2], { dtype: 'float64' })), /backward through the graph a second time|freed/)
})

test('autograd.grad matches central differences on a composite function', () => {
  const f = (x) => x.tanh().mul(x.sin()).add(x.exp().mul(0.5)).logsumexp(0)
  const x0 = [0.3, -1.2, 2.0, 0.7]
  const x = ft.tensor(x0, { dtype: 'float64', requiresGrad: true })
  const [g] = ft.autograd.grad(f(x), [x])
  const h = 1e-6
  const numeric = x0.map((_, i) => {
    const p = x0.slice(); p[i] += h
    const m = x0.slice(); m[i] -= h
    return (f(ft.tensor(p, { dtype: 'float64' })).item() - f(ft.tensor(m, { dtype: 'float64' })).item()) / (2 * h)
  })
  close(g.toArray(), numeric, 1e-7)
  assert.equal(x.grad, null) // grad() returns, it does not accumulate
})

test('autograd.grad with createGraph gives second derivatives; allowUnused gives null', () => {
  const x = ft.tensor([2], { dtype: 'float64', requiresGrad: true })
  const u = ft.tensor([5], { dtype: 'float64', requiresGrad: true })
  const [g] = ft.autograd.grad(x.pow(3).sum(), x, { createGraph: true })
  close(g.toArray(), [12], 1e-12)
  const [g2] = ft.autograd.grad(g.sum(), [x])
  close(g2.toArray(), [12], 1e-12) // d2/dx2 x^3 = 6x
  const [gx, gu] = ft.autograd.grad(x.mul(2).sum(), [x, u], null, { allowUnused: true })
  close(gx.toArray(), [2], 0)
  assert.equal(gu, null)
  assert.throws(() => ft.autograd.grad(x.mul(2).sum(), [x, u]), /appears to not have been used/)
})

test('noGrad records nothing and restores the mode, even on throw', () => {
  const x = ft.ones([2], true)
  const y = ft.noGrad(() => x.mul(2))
  assert.equal(y.requiresGrad, false)
  assert.equal(ft.isGradEnabled(), true)
  assert.throws(() => ft.noGrad(() => { throw new Error('inside') }), /inside/)
  assert.equal(ft.isGradEnabled(), true)
  ft.noGrad(() => {
    assert.equal(ft.isGradEnabled(), false)
    const z = ft.enableGrad(() => x.mul(2))
    assert.equal(z.requiresGrad, true)
    assert.equal(ft.isGradEnabled(), false)
  })
  assert.equal(x.mul(2).requiresGrad, true)
})

test('detach shares memory outside autograd', () => {
  const x = ft.ones([2], true)
  const d = x.detach()
  assert.equal(d.requiresGrad, false)
  d.add_(1)
  assert.deepEqual(x.toArray(), [2, 2])
})

test('a small MLP trains with AdamW-free plain SGD from JavaScript', () => {
  ft.manualSeed(0)
  const w1 = ft.randn([1, 16]).mul(0.5).requiresGrad_(true)
  const b1 = ft.zeros([16], true)
  const w2 = ft.randn([16, 1]).mul(0.5).requiresGrad_(true)
  const xs = ft.linspace(-1, 1, 32).view(32, 1)
  const ys = xs.mul(3).sin()
  const loss = () => xs.matmul(w1).add(b1).tanh().matmul(w2).sub(ys).pow(2).mean()
  const first = loss().item()
  for (let step = 0; step < 300; step++) {
    const l = loss()
    for (const p of [w1, b1, w2]) p.grad = null
    l.backward()
    ft.noGrad(() => { for (const p of [w1, b1, w2]) p.sub_(p.grad.mul(0.2)) })
  }
  const last = loss().item()
  assert.ok(last < first / 5, `${first} -> ${last}`)
})
