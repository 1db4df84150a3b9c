'use strict'
// `tensor(data, {dtype, requiresGrad})` from nested arrays or a
// TypedArray, and the Tensor conveniences that live in JavaScript
// (printing in console.log, `Symbol.dispose` for `using`).
const util = require('node:util')
const native = require('./native')

/**
 * A tensor (`torch.Tensor`): an n-dimensional array over shared, strided
 * storage, with autograd. Made by the creation functions and ops, never
 * with `new` (Note [Tensor handles] in src/tensor.rs).
 */
class Tensor {
  constructor (handle) { this._h = handle }
  /** The sizes, as an array of numbers. */
  get shape () { return native._shape(this._h) }
  /** The element type's name: `float32`, `int64`, `bool`, ... */
  get dtype () { return native._dtype(this._h) }
  /** The device: `cpu`. */
  get device () { return native._device(this._h) }
  /** The number of dimensions. */
  get ndim () { return native._ndim(this._h) }
  /** Whether autograd records ops on it. */
  get requiresGrad () { return native._requiresGrad(this._h) }
  set requiresGrad (value) { native._setRequiresGrad(this._h, Boolean(value)) }
  /** Whether it is a leaf of the autograd graph. */
  get isLeaf () { return native._isLeaf(this._h) }
  /** Its accumulated gradient, or `null`. */
  get grad () { return native._grad_of(this._h) }
  set grad (value) { native._setGrad(this._h, value ?? null) }
  /** Whether `dispose()` was called. */
  get isDisposed () { return native._isDisposed(this._h) }
  /** The number of elements. */
  numel () { return native._numel(this._h) }
  /** The number of dimensions. */
  dim () { return native._ndim(this._h) }
  /** The strides, in elements. */
  stride () { return native._stride(this._h) }
  /** Whether the elements are contiguous in row-major order. */
  isContiguous () { return native._isContiguous(this._h) }
  /** Printed as torch prints it: `tensor([1., 2.])`. */
  toString () { return native._toString(this._h) }
  /** The value of a one-element tensor: a number, or a boolean for bool. */
  item () { return native._item(this._h) }
  /** The elements as nested arrays (`t.tolist()`). */
  toArray () { return native._toArray(this._h) }
  /**
   * The elements as a TypedArray: a view of the tensor's memory with no
   * copy when it is contiguous, else a row-major copy.
   */
  data () { return native._data(this._h) }
  /** Backward from this tensor (`t.backward(gradient, {retainGraph, createGraph})`). */
  backward (gradient, options) { native._backward(this._h, gradient ?? null, options) }
  /** A tensor sharing the storage, outside autograd. */
  detach () { return native._detach(this._h) }
  /** Free the memory now; later use throws. */
  dispose () { native._dispose(this._h) }
}
native._setTensorClass(Tensor)

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

module.exports = { Tensor, tensor }
