'use strict'
// The native add-on, built by `npm install` (scripts/build.js) next to
// the package as ferrotorch.node.
const path = require('node:path')

const file = process.env.FERROTORCH_NODE_ADDON || path.join(__dirname, '..', 'ferrotorch.node')
let native
try {
  native = require(file)
} catch (e) {
  const err = new Error(
    `ferrotorch: cannot load the native add-on ${file} (${e.message}); ` +
      'build it with `npm run build` in the package folder (needs Rust)')
  err.cause = e
  throw err
}
module.exports = native
