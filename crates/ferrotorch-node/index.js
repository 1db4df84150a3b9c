'use strict'
/**
 * ferrotorch for Node.js: PyTorch's tensors, ops, autograd and saved
 * programs, natively, with no libtorch.
 *
 *   const ft = require('ferrotorch')
 *   const x = ft.ones([2, 3], true)            // requiresGrad
 *   const y = x.mul(2).sum()
 *   y.backward()
 *   console.log(x.grad.toString())
 */
const native = require('./lib/native')
const ops = require('./lib/ops')
const { Tensor, tensor } = require('./lib/tensor')
const autograd = require('./lib/autograd')
const script = require('./lib/script')

const ft = {
  Tensor,
  ScriptModule: script.ScriptModule,
  version: native.version(),
  tensor,
  fromTypedArray: native.fromTypedArray,
  noGrad: autograd.noGrad,
  enableGrad: autograd.enableGrad,
  isGradEnabled: autograd.isGradEnabled,
  autograd: { grad: autograd.grad },
  jit: { load: script.load, optimizeForInference: script.optimizeForInference },
  ops: { call: ops.callByName },
  // dtypes by name, as torch.float32 etc.
  float32: 'float32',
  float: 'float32',
  float64: 'float64',
  double: 'float64',
  float16: 'float16',
  half: 'float16',
  bfloat16: 'bfloat16',
  int64: 'int64',
  long: 'int64',
  int32: 'int32',
  int: 'int32',
  int16: 'int16',
  int8: 'int8',
  uint8: 'uint8',
  bool: 'bool',
  complex32: 'complex32',
  chalf: 'complex32',
  complex64: 'complex64',
  cfloat: 'complex64',
  complex128: 'complex128',
  cdouble: 'complex128'
}
ops.install(ft)

module.exports = ft
