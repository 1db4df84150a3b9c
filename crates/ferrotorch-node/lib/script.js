'use strict'
// ScriptModule: a saved program run from JavaScript (Note [Async forward]
// in src/script.rs).
const native = require('./native')

const { ScriptModule } = native

const CLASSES = { FERROTORCH_TYPE: TypeError, FERROTORCH_INDEX: RangeError }

/** A worker's rejection back as the class a synchronous call throws. */
function remap (e) {
  const m = /^\[(FERROTORCH_[A-Z_]+)\] ([\s\S]*)$/.exec(e && e.message)
  if (!m) return e
  const Cls = CLASSES[m[1]] || Error
  const err = new Cls(m[2])
  err.code = m[1]
  return err
}

Object.assign(ScriptModule.prototype, {
  /** Run the program: one output as a Tensor, several as an array. */
  forward (...inputs) { return this._forward(inputs) },
  /** `forward` on libuv's thread pool: the event loop keeps running. */
  async forwardAsync (...inputs) {
    try {
      return await this._forwardAsync(inputs)
    } catch (e) {
      throw remap(e)
    }
  },
  /** Evaluation mode; returns the module. */
  eval () { this._setTraining(false); return this },
  /** Training mode (`train(false)` is `eval()`); returns the module. */
  train (mode = true) { this._setTraining(Boolean(mode)); return this },
  /** The parameters' and buffers' tensors, in order. */
  parameters () { return this.namedParameters().map(([, t]) => t) }
})

/** Load a saved program (`torch.jit.load`). */
function load (path) { return new ScriptModule(path) }

/**
 * `torch.jit.optimize_for_inference`: `mod` goes to eval mode, and the
 * result is a frozen copy (parameters as constants, eval convolution
 * blocks fused, Winograd filter transforms kept between calls).
 */
function optimizeForInference (mod) {
  if (!(mod instanceof ScriptModule)) {
    throw new TypeError('optimizeForInference expects a ScriptModule as input.')
  }
  return mod._optimizeForInference()
}

module.exports = { ScriptModule, load, optimizeForInference }
