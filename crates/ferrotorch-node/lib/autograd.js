'use strict'
// Grad mode scopes and `autograd.grad`.
const native = require('./native')

function scoped (enabled, fn) {
  if (typeof fn !== 'function') throw new TypeError('expected a function to run')
  native._pushGradMode(enabled)
  try {
    return fn()
  } finally {
    native._popGradMode()
  }
}

/**
 * Run `fn` with autograd off (`with torch.no_grad():`); returns what `fn`
 * returns. The mode covers `fn`'s synchronous body: for a model run on the
 * thread pool, start `forwardAsync` inside it (it captures the mode).
 */
function noGrad (fn) { return scoped(false, fn) }

/** Run `fn` with autograd on (`with torch.enable_grad():`). */
function enableGrad (fn) { return scoped(true, fn) }

/**
 * `torch.autograd.grad(outputs, inputs, grad_outputs, ...)`: the gradients
 * of `outputs` with respect to `inputs` (Tensors or arrays), returned in an
 * array, `null` for unused inputs with `{allowUnused: true}`.
 */
function grad (outputs, inputs, gradOutputs, options) {
  if (gradOutputs !== null && gradOutputs !== undefined && !Array.isArray(gradOutputs) &&
      !(gradOutputs instanceof require('./tensor').Tensor)) {
    options = gradOutputs
    gradOutputs = undefined
  }
  return native._grad(outputs, inputs, gradOutputs ?? null, options)
}

module.exports = { noGrad, enableGrad, grad, isGradEnabled: native.isGradEnabled }
