#!/usr/bin/env node
'use strict'
// Build the add-on (`npm install` runs this): napi-rs's CLI runs `cargo
// build` of this crate, copies the library to ferrotorch.node and writes
// native.d.ts from the #[napi] items; then scripts/gen-types.js writes
// the op declarations (ops.d.ts) and the ES module entry (index.mjs) from
// the dispatcher's schemas. Needs Rust (cargo) on PATH.
//
//   node scripts/build.js --release     # what `npm install` runs
//   node scripts/build.js               # a debug build
//
// FERROTORCH_NODE_DEBUG=1 makes `npm install` build for debugging, and
// FERROTORCH_NODE_FEATURES (cargo's --features list) selects the crate's
// features: CI's install check sets both to reuse the tests' build.
const { execFileSync } = require('node:child_process')
const path = require('node:path')

const root = path.join(__dirname, '..')
const release = process.argv.includes('--release') && process.env.FERROTORCH_NODE_DEBUG !== '1'

/** napi-rs's CLI: this package's dependency. `npm install <folder>` links
 * the folder and runs this script without installing the folder's own
 * dependencies, so they are installed here first when missing. */
function napiCli () {
  const find = () => path.join(path.dirname(require.resolve('@napi-rs/cli/package.json', { paths: [root] })), 'dist', 'cli.js')
  try {
    return find()
  } catch {
    const npm = process.env.npm_execpath
    const [cmd, pre] = npm && npm.endsWith('.js') ? [process.execPath, [npm]] : ['npm', []]
    execFileSync(cmd, pre.concat(['install', '--no-save', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund']),
      { cwd: root, stdio: 'inherit' })
    return find()
  }
}
const cli = napiCli()

// native.d.ts names the JavaScript Tensor class (tensor.d.ts) in its signatures
const args = [cli, 'build', '--dts', 'native.d.ts', '--dts-header', "import type { Tensor } from './tensor'\n/** A value the add-on reads itself: a Tensor, its handle, or any argument. */\ntype Raw = any\n", '--no-const-enum']
if (release) args.push('--release')
if (process.env.FERROTORCH_NODE_FEATURES) args.push('--features', process.env.FERROTORCH_NODE_FEATURES)
try {
  execFileSync(process.execPath, args, { cwd: root, stdio: 'inherit' })
} catch (e) {
  console.error('ferrotorch: building the native add-on failed; it needs Rust (https://rustup.rs) and cargo on PATH')
  process.exit(1)
}
execFileSync(process.execPath, [path.join(__dirname, 'gen-types.js')], { cwd: root, stdio: 'inherit' })
