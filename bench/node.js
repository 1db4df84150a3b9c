#!/usr/bin/env node
// Issue 21's figures, side by side in one run (alternating rounds):
//
// - `a.add(b)` on 1-element tensors from Node (ns per call), against the
//   same op from Rust (W5 in BENCHMARKS.md) and PyTorch from Python;
// - ResNet-18 batch 1 from a saved program: Node's `forward` against the
//   same file run from Rust (the run_program example, `--time`), the same
//   program through `jit.optimizeForInference` from Node, and, when
//   onnxruntime-node is installed and `--onnx FILE` is given, the same
//   architecture exported to ONNX (by ferrotorch's torch.onnx.export, or
//   PyTorch's with --torch) run by onnxruntime-node.
//
//   python examples/node/resnet18.py /tmp/rn        # the saved program
//   cargo build --release -p ferrotorch-node -p ferrotorch --example run_program
//   cp target/release/libferrotorch_node.so crates/ferrotorch-node/ferrotorch.node
//   node bench/node.js --program /tmp/rn/resnet18_trace.pt \
//       --rust target/release/examples/run_program [--rounds 5] [--onnx /tmp/rn/resnet18.onnx] \
//       [--torch-python /path/to/venv-with-torch/bin/python]
//
// onnxruntime-node is looked up from the working directory's
// node_modules (`npm install --ignore-scripts onnxruntime-node` there);
// the ONNX file comes from `python bench/export_onnx.py FILE [--torch]`.
'use strict'
const { execFileSync } = require('node:child_process')
const path = require('node:path')
const ft = require(path.join(__dirname, '..', 'crates', 'ferrotorch-node'))

function arg (name, dflt) {
  const i = process.argv.indexOf(name)
  return i > 0 ? process.argv[i + 1] : dflt
}
const rounds = Number(arg('--rounds', 5))
const program = arg('--program')
const rust = arg('--rust')
const onnx = arg('--onnx')
const torchPython = arg('--torch-python')

// PyTorch's W5 from Python, timed the same way (200,000 calls after a warm-up)
const TORCH_ADD = `
import time, torch
torch.set_num_threads(2)
a = torch.ones(1); b = torch.ones(1)
for _ in range(20000): a + b
t = time.perf_counter_ns()
for _ in range(200000): a + b
print((time.perf_counter_ns() - t) / 200000)
`

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] }

function tinyAddNs () {
  const a = ft.ones([1])
  const b = ft.ones([1])
  const n = 200_000
  for (let i = 0; i < 20_000; i++) a.add(b)
  const t = process.hrtime.bigint()
  for (let i = 0; i < n; i++) a.add(b)
  return Number(process.hrtime.bigint() - t) / n
}

function forwardUs (f, n) {
  for (let i = 0; i < 3; i++) f()
  const ts = []
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint()
    f()
    ts.push(Number(process.hrtime.bigint() - t) / 1e3)
  }
  return median(ts)
}

async function onnxUs (n) {
  let ort
  try { ort = require(require.resolve('onnxruntime-node', { paths: [process.cwd()] })) } catch { return null }
  const session = await ort.InferenceSession.create(onnx, { intraOpNumThreads: require('node:os').availableParallelism() })
  const input = new ort.Tensor('float32', new Float32Array(3 * 224 * 224).fill(1), [1, 3, 224, 224])
  const feeds = { [session.inputNames[0]]: input }
  for (let i = 0; i < 3; i++) await session.run(feeds)
  const ts = []
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint()
    await session.run(feeds)
    ts.push(Number(process.hrtime.bigint() - t) / 1e3)
  }
  return median(ts)
}

async function main () {
  const rows = { add_ns: [], torch_add_ns: [], node_resnet_us: [], node_resnet_ofi_us: [], rust_resnet_us: [], ort_resnet_us: [] }
  const model = program ? new ft.ScriptModule(program) : null
  // what a Node program runs for inference: the optimised copy (ort
  // optimises its graph when the session is made, by default)
  const fast = model ? ft.jit.optimizeForInference(model) : null
  const x = ft.ones([1, 3, 224, 224], false)
  for (let r = 0; r < rounds; r++) {
    rows.add_ns.push(tinyAddNs())
    if (torchPython) rows.torch_add_ns.push(Number(execFileSync(torchPython, ['-c', TORCH_ADD]).toString()))
    if (model) rows.node_resnet_us.push(ft.noGrad(() => forwardUs(() => model.forward(x), 20)))
    if (fast) rows.node_resnet_ofi_us.push(ft.noGrad(() => forwardUs(() => fast.forward(x), 20)))
    if (model && rust) {
      rows.rust_resnet_us.push(JSON.parse(execFileSync(rust, [program, '1,3,224,224', '--time', '20'])).median_us)
    }
    if (onnx) {
      const us = await onnxUs(20)
      if (us !== null) rows.ort_resnet_us.push(us)
    }
  }
  const out = {}
  for (const [k, v] of Object.entries(rows)) if (v.length) out[k] = { rounds: v.map((x) => Number(x.toFixed(1))), median: Number(median(v).toFixed(1)) }
  if (rows.rust_resnet_us.length) {
    out.node_over_rust = Number(median(rows.node_resnet_us.map((v, i) => v / rows.rust_resnet_us[i])).toFixed(3))
  }
  if (rows.ort_resnet_us.length && rows.node_resnet_us.length) {
    out.node_over_ort = Number(median(rows.node_resnet_us.map((v, i) => v / rows.ort_resnet_us[i])).toFixed(3))
    out.node_ofi_over_ort = Number(median(rows.node_resnet_ofi_us.map((v, i) => v / rows.ort_resnet_us[i])).toFixed(3))
  }
  console.log(JSON.stringify(out, null, 1))
}

main()
