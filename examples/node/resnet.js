#!/usr/bin/env node
// The seeds/000 demo in Node: load the ResNet-18 program that
// examples/node/resnet18.py traced and saved, run it on a tensor of ones,
// and print the top-5 classes.
//
//   python examples/node/resnet18.py /tmp/rn        # trace and save
//   node examples/node/resnet.js /tmp/rn/resnet18_trace.pt
//
// `--json` prints the top-5 and the output's float32 bytes in hex instead
// (the test compares them with Python's and Rust's).
'use strict'
const path = require('node:path')
const ft = require(path.join(__dirname, '..', '..', 'crates', 'ferrotorch-node'))

const file = process.argv.find((a, i) => i > 1 && !a.startsWith('--')) || 'resnet18_trace.pt'
const json = process.argv.includes('--json')

const model = new ft.ScriptModule(file)
const input = ft.ones([1, 3, 224, 224], false)
const output = ft.noGrad(() => model.forward(input)).flatten()
const { values, indices } = output.topk(5)

if (json) {
  const data = output.data()
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('hex')
  console.log(JSON.stringify({ top5: indices.toArray(), bytes }))
} else {
  const v = values.toArray()
  indices.toArray().forEach((c, i) => console.log(`class ${String(c).padStart(4)}  score ${v[i].toFixed(4)}`))
}
