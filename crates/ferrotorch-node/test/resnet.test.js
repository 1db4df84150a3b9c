'use strict'
// The seeds/000 demo: Python traces ResNet-18 and saves it
// (examples/node/resnet18.py), Node loads and runs it
// (examples/node/resnet.js), and Python, Rust (the run_program example)
// and Node give the same output bits. Also: forwardAsync keeps the event
// loop turning while ResNet-18 runs.
//
// Needs FERROTORCH_PYTHON (a Python that imports ferrotorch) and
// FERROTORCH_RUN_PROGRAM (the built run_program example); scripts/test.sh
// sets both. Without them the tests skip.
const test = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const ft = require('..')

const repo = path.join(__dirname, '..', '..', '..')
const python = process.env.FERROTORCH_PYTHON
const rust = process.env.FERROTORCH_RUN_PROGRAM
const skip = !python || !rust ? 'set FERROTORCH_PYTHON and FERROTORCH_RUN_PROGRAM (scripts/test.sh does)' : false

let dir
function program () {
  if (!dir) {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferrotorch-resnet-'))
    execFileSync(python, [path.join(repo, 'examples', 'node', 'resnet18.py'), dir], { stdio: 'pipe' })
  }
  return path.join(dir, 'resnet18_trace.pt')
}

test('Python, Rust and Node give ResNet-18\'s output bit for bit', { skip }, () => {
  const file = program()
  const py = JSON.parse(fs.readFileSync(path.join(dir, 'resnet18_python.json'), 'utf8'))
  const node = JSON.parse(execFileSync(process.execPath, [path.join(repo, 'examples', 'node', 'resnet.js'), file, '--json']))
  const rs = JSON.parse(execFileSync(rust, [file, '1,3,224,224', '--json']))
  assert.equal(py.bytes.length, 8000) // 1000 float32 scores
  assert.equal(node.bytes, py.bytes)
  assert.equal(rs.bytes, py.bytes)
  assert.deepEqual(node.top5, py.top5)
  assert.deepEqual(rs.top5, py.top5)
  // and the demo's plain output lists the same five classes
  const text = execFileSync(process.execPath, [path.join(repo, 'examples', 'node', 'resnet.js'), file]).toString()
  assert.deepEqual(text.trim().split('\n').map((l) => Number(/class\s+(\d+)/.exec(l)[1])), py.top5)
})

test('optimizeForInference: ResNet-18 fused and frozen gives the traced output, call after call', { skip }, () => {
  const file = program()
  const py = JSON.parse(fs.readFileSync(path.join(dir, 'resnet18_python.json'), 'utf8'))
  const want = new Float32Array(Uint8Array.from(Buffer.from(py.bytes, 'hex')).buffer)
  const o = ft.jit.optimizeForInference(new ft.ScriptModule(file))
  assert.match(o.graph, /_conv2d_affine/)
  assert.doesNotMatch(o.graph, /batch_norm/)
  const x = ft.ones([1, 3, 224, 224], false)
  // the second call reuses the Winograd filter transforms the first made
  for (let run = 0; run < 2; run++) {
    const y = ft.noGrad(() => o.forward(x)).flatten().toArray()
    assert.equal(y.length, 1000)
    const err = Math.max(...y.map((v, i) => Math.abs(v - want[i])))
    assert.ok(err < 1e-4, `run ${run}: max difference ${err}`)
  }
})

test('forwardAsync does not block the event loop: a 1 ms timer\'s p99 lag stays under 10 ms', { skip }, async (t) => {
  const m = new ft.ScriptModule(program())
  const x = ft.ones([1, 3, 224, 224], false)
  const lags = []
  let last = performance.now()
  const timer = setInterval(() => {
    const now = performance.now()
    lags.push(now - last - 1)
    last = now
  }, 1)
  const t0 = performance.now()
  let runs = 0
  await ft.noGrad(async () => {
    while (runs < 3 || performance.now() - t0 < 1500) {
      const y = await m.forwardAsync(x)
      assert.deepEqual(y.shape, [1, 1000])
      runs++
    }
  })
  clearInterval(timer)
  lags.sort((a, b) => a - b)
  const p99 = lags[Math.floor(lags.length * 0.99)]
  t.diagnostic(`p99 timer lag ${p99.toFixed(2)} ms, max ${lags[lags.length - 1].toFixed(2)} ms, ${lags.length} ticks, ${runs} forwards`)
  assert.ok(lags.length > 200, `${lags.length} timer ticks in ${runs} forwards`)
  assert.ok(p99 < 10, `p99 timer lag ${p99.toFixed(2)} ms over ${lags.length} ticks, ${runs} forwards`)
})

test.after(() => { if (dir) fs.rmSync(dir, { recursive: true, force: true }) })
