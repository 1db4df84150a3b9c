'use strict'
// Functions and Tensor methods generated from the dispatcher's schemas at
// load (Note [One binding layer] in the core): every op `name` becomes
// `ft.name(...)` and, when its first argument is `Tensor self`,
// `tensor.name(...)`, under torch's name and its camelCase form
// (`log_softmax` and `logSoftmax`). Positional arguments come first; a
// trailing plain object holds keyword arguments (`a.add(b, {alpha: 2})`,
// `ft.sum(t, {dim: [1], keepdim: true})`), whose keys may be camelCase.
const native = require('./native')

const { Tensor } = require('./tensor')

// the op-call path (Note [The op call path] in src/ops.rs): tensors go in
// as their slot indices, marked in a bit mask; a single tensor result
// comes back as the slot index of the fresh Tensor passed in, any other
// result as a one-element array
const rawCall = native._opCaller()

/** The Tensor or value a raw call returned, given the fresh `out` it had. */
function result (r, out) {
  if (typeof r === 'number') {
    out._h = r
    return out
  }
  return r[0]
}

function call (id, self, args, kw) {
  let mask = 0
  for (let i = 0; i < args.length; i++) {
    const a = args[i]
    if (a instanceof Tensor) {
      args[i] = a._h
      mask |= 1 << i
    }
  }
  const out = new Tensor(-1)
  return result(rawCall(id, self, kw, out, mask, ...args), out)
}

/** `log_softmax` -> `logSoftmax`; a trailing `_` (in place) is kept. */
function camel (name) {
  const tail = name.endsWith('_') ? '_' : ''
  const core = tail ? name.slice(0, -1) : name
  return core.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase()) + tail
}

/** A plain options object (not a Tensor, array, or null). */
function isOptions (x) {
  return x !== null && typeof x === 'object' && Object.getPrototypeOf(x) === Object.prototype
}

function splitOptions (args) {
  const n = args.length
  if (n > 0 && isOptions(args[n - 1])) return [args.slice(0, n - 1), args[n - 1]]
  return [args, undefined]
}

function packSizes (args, at) {
  // `zeros(2, 3)`, `t.view(2, 3)`: trailing numbers are one size list
  if (args.length > at + 1 || (args.length === at + 1 && typeof args[at] === 'number')) {
    const rest = args.slice(at)
    if (rest.every((a) => typeof a === 'number')) return args.slice(0, at).concat([rest])
  }
  return args
}

function named (out, names) {
  if (names.length > 1 && Array.isArray(out) && out.length === names.length) {
    names.forEach((n, i) => { out[n] = out[i] })
  }
  return out
}

function makeOp (op) {
  const { id, writesSelf, creation, returnNames } = op
  const varargAt = op.varargSizes == null ? -1 : op.varargSizes

  // the common case, kept small for speed: no varargs, no special result
  if (varargAt < 0 && !writesSelf && !creation && returnNames.length === 0) {
    return {
      fn (...args) {
        const [pos, kw] = splitOptions(args)
        return call(id, undefined, pos, kw)
      },
      method (...args) {
        const n = args.length
        // `a.add(b)`: one tensor argument, the commonest call, without the
        // argument loop and the spread of `call`
        if (n === 1 && args[0] instanceof Tensor) {
          const out = new Tensor(-1)
          return result(rawCall(id, this._h, undefined, out, 1, args[0]._h), out)
        }
        if (n > 0 && isOptions(args[n - 1])) return call(id, this._h, args.slice(0, n - 1), args[n - 1])
        return call(id, this._h, args, undefined)
      }
    }
  }

  function run (self, args) {
    let [pos, kw] = splitOptions(args)
    let requiresGrad = false
    if (creation) {
      // torch's `requires_grad=`, and seeds/000's `ones(shape, requiresGrad)`
      if (pos.length > 1 && typeof pos[pos.length - 1] === 'boolean') {
        requiresGrad = pos[pos.length - 1]
        pos = pos.slice(0, -1)
      }
      if (kw && ('requiresGrad' in kw || 'requires_grad' in kw)) {
        kw = { ...kw }
        requiresGrad = Boolean(kw.requiresGrad ?? kw.requires_grad)
        delete kw.requiresGrad
        delete kw.requires_grad
      }
    }
    if (varargAt >= 0) pos = packSizes(pos, self === undefined ? varargAt : varargAt - 1)
    const first = pos[0] // (call replaces Tensors in pos by their handles)
    const out = call(id, self === undefined ? undefined : self._h, pos, kw)
    if (writesSelf) return self === undefined ? first : self
    if (requiresGrad) out.requiresGrad = true
    return named(out, returnNames)
  }
  return {
    fn (...args) { return run(undefined, args) },
    method (...args) { return run(this, args) }
  }
}

/**
 * Define every op on `target` (the package's exports) and as a method of
 * Tensor, without replacing what is already defined there.
 */
function install (target) {
  const ops = native._bindingOps()
  for (const op of ops) {
    const { fn, method } = makeOp(op)
    const names = [...new Set([op.name, camel(op.name)])]
    Object.defineProperty(fn, 'name', { value: op.name })
    fn.schemas = op.schemas
    for (const n of names) {
      if (!(n in target)) target[n] = fn
      if (op.isMethod && !(n in Tensor.prototype)) {
        Object.defineProperty(Tensor.prototype, n, { value: method, writable: true, configurable: true })
      }
    }
  }
  return ops
}

/** Call any registered op by name (`ops.call('add.Tensor', a, b)`). */
function callByName (name, ...args) {
  const [pos, kw] = splitOptions(args)
  return native._callByName(name, pos, kw)
}

module.exports = { install, camel, callByName, isOptions }
