'use strict'
// `tensor(data, {dtype, requiresGrad})` from nested arrays or a
// TypedArray, and the Tensor conveniences that live in JavaScript
// (printing in console.log, `Symbol.dispose` for `using`).
const util = require('node:util')
const native = require('./native')

const { Tensor } = native

/** The TypedArray class that holds a dtype's elements. */
const ARRAY_OF = {
  float32: Float32Array,
  float64: Float64Array,
  int32: Int32Array,
  int64: BigInt64Array,
  int16: Int16Array,
  int8: Int8Array,
  uint8: Uint8Array,
  bool: Uint8Array
}

const ALIASES = { float: 'float32', double: 'float64', long: 'int64', int: 'int32', short: 'int16' }

function flatten (data, shape, out, depth) {
  if (!Array.isArray(data)) {
    if (depth !== shape.length) throw new TypeError('tensor(): nested arrays of uneven depth')
    out.push(data)
    return
  }
  if (depth === shape.length) shape.push(data.length)
  else if (shape[depth] !== data.length) {
    throw new RangeError(`tensor(): expected a sequence of length ${shape[depth]} at dim ${depth} (got ${data.length})`)
  }
  for (const x of data) flatten(x, shape, out, depth + 1)
}

function inferDtype (flat) {
  // torch's rule: bools -> bool, integers -> int64, any float -> float32
  if (flat.length === 0) return 'float32'
  if (flat.every((x) => typeof x === 'boolean')) return 'bool'
  if (flat.every((x) => typeof x === 'bigint' || (typeof x === 'number' && Number.isInteger(x)))) return 'int64'
  return 'float32'
}

/**
 * A new tensor copied from nested arrays of numbers, booleans or BigInts,
 * or from a TypedArray (`torch.tensor(data, dtype=..., requires_grad=...)`).
 */
function tensor (data, options = {}) {
  let dtype = options.dtype
  if (dtype !== undefined) dtype = ALIASES[dtype] || String(dtype).replace(/^torch\./, '')
  let t
  if (ArrayBuffer.isView(data) && !(data instanceof DataView)) {
    t = native.fromTypedArray(data, [data.length], { copy: true, dtype: dtype === 'bool' ? 'bool' : undefined })
    if (dtype !== undefined && t.dtype !== dtype) t = t.to({ dtype })
  } else {
    if (data instanceof Tensor) throw new TypeError('tensor(): use t.clone().detach() to copy a Tensor')
    const shape = []
    const flat = []
    flatten(data, shape, flat, 0)
    for (const x of flat) {
      if (typeof x !== 'number' && typeof x !== 'boolean' && typeof x !== 'bigint') {
        throw new TypeError(`tensor(): an element of type ${typeof x} is not a number, boolean or BigInt`)
      }
    }
    const target = dtype || inferDtype(flat)
    const Cls = ARRAY_OF[target]
    let arr
    if (Cls === BigInt64Array) arr = BigInt64Array.from(flat, (x) => BigInt(typeof x === 'boolean' ? Number(x) : x))
    else if (Cls) arr = Cls.from(flat, (x) => Number(x))
    if (arr) {
      t = native.fromTypedArray(arr, shape, { copy: true, dtype: target === 'bool' ? 'bool' : undefined })
    } else {
      // float16 / bfloat16: through float64, then cast
      t = native.fromTypedArray(Float64Array.from(flat, (x) => Number(x)), shape, { copy: true }).to({ dtype: target })
    }
  }
  if (options.requiresGrad || options.requires_grad) t.requiresGrad = true
  return t
}

if (typeof Symbol.dispose === 'symbol') {
  Tensor.prototype[Symbol.dispose] = function () { this.dispose() }
}
Tensor.prototype[util.inspect.custom] = function () {
  return this.isDisposed ? 'Tensor <disposed>' : this.toString()
}
/** Set `requiresGrad` and return the tensor (`t.requires_grad_()`). */
Tensor.prototype.requiresGrad_ = function (requiresGrad = true) {
  this.requiresGrad = requiresGrad
  return this
}
Tensor.prototype.requires_grad_ = Tensor.prototype.requiresGrad_
Tensor.prototype.toJSON = function () { return this.toArray() }

module.exports = { tensor }
