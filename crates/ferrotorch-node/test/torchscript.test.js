'use strict'
// The seeds/000 flow on files PyTorch wrote: torch.jit.trace(...).save()
// archives (crates/ferrotorch-jit/tests/fixtures/torchscript/gen.py,
// torch 2.15) opened by `new ScriptModule(path)` and run with PyTorch's
// outputs.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const ft = require('..')

const fix = path.join(__dirname, '..', '..', 'ferrotorch-jit', 'tests', 'fixtures', 'torchscript')
const io = (name) => JSON.parse(fs.readFileSync(path.join(fix, `${name}_io.json`), 'utf8'))

function near (got, want) {
  assert.equal(got.length, want.length)
  for (let i = 0; i < want.length; i++) {
    assert.ok(Math.abs(got[i] - want[i]) <= 1e-5 * (1 + Math.abs(want[i])), `[${i}] ${got[i]} vs PyTorch's ${want[i]}`)
  }
}

for (const name of ['resnet18_small', 'cnn']) {
  test(`${name}.pt, traced and saved by PyTorch, gives PyTorch's output`, async () => {
    const m = new ft.ScriptModule(path.join(fix, `${name}.pt`))
    const e = io(name)
    const x = ft.tensor(e.input, { dtype: 'float32' }).reshape(e.input_shape)
    const y = ft.noGrad(() => m.forward(x))
    assert.deepEqual(y.shape, e.output_shape)
    near(y.flatten().toArray(), e.output)
    const [z] = [await m.forwardAsync(x)].flat()
    near(z.flatten().toArray(), e.output)
    assert.ok(m.parameters().length > 0)
  })
}

test('a torch.jit.script archive is refused naming the construct', () => {
  assert.throws(() => new ft.ScriptModule(path.join(fix, 'scripted.pt')), /'if' is control flow/)
})
