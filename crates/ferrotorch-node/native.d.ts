import type { Tensor } from './tensor'
/** A value the add-on reads itself: a Tensor, its handle, or any argument. */
type Raw = any

export type TypedArray =
  | Int8Array
  | Uint8Array
  | Uint8ClampedArray
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | Float32Array
  | Float64Array
  | BigInt64Array
  | BigUint64Array

/** A loaded program (`torch.jit.ScriptModule`). */
export declare class ScriptModule {
  /**
   * Load a saved program (`torch.jit.load(path)`). The file is checked
   * before anything in it is used; a file format never runs code.
   */
  constructor(path: string)
  /**
   * Run the program on an array of tensors (`forward(...tensors)` in
   * `lib/script.js`): one output as a Tensor, several as an array.
   */
  _forward(inputs: Tensor[]): Tensor | Tensor[]
  /** `forward` on libuv's thread pool (Note [Async forward]). */
  _forwardAsync(inputs: Tensor[]): Promise<Tensor | Tensor[]>
  /**
   * `[name, Tensor]` for every parameter and buffer of the program, by
   * qualified name (`layer1.0.conv1.weight`).
   */
  namedParameters(): [string, Tensor][]
  /** The graph as TorchScript-style source (`module.code`). */
  get code(): string
  /** The graph's IR, printed as torch prints `module.graph`. */
  get graph(): string
  /**
   * Whether `train()` was called last (a traced graph keeps the mode it
   * was traced in, as in torch; the flag is what `training` reads).
   */
  get training(): boolean
  /**
   * `torch.jit.optimize_for_inference`: puts this module in eval mode
   * (as torch does), then returns a frozen copy whose parameters are
   * constants, with eval-mode convolution blocks fused and, where a
   * 3×3 filter takes the Winograd path, its transform kept from call to
   * call (Note [Prepacked convolution filters] in ferrotorch-core).
   */
  _optimizeForInference(): ScriptModule
  _setTraining(mode: boolean): void
}

/** `t.backward(gradient?, {retainGraph, createGraph})`. */
export declare function _backward(h: Raw, gradient?: Raw | undefined | null, options?: BackwardOptions | undefined | null): void

/** Every op, for `lib/ops.js` to generate functions and methods from. */
export declare function _bindingOps(): Array<OpInfo>

/**
 * Call an op by its name (`add`, `add.Tensor`, a custom op's
 * `ns::name`): the slow road, one name lookup per call, for ops the
 * generated functions do not cover (`ops.call` in `lib/ops.js`).
 */
export declare function _callByName(name: string, args: unknown[], kwargs?: object): any

/**
 * `t.data()`: the elements as a TypedArray (Float32Array, BigInt64Array
 * for int64, Uint8Array for bool and uint8, Uint16Array of the bits for
 * float16/bfloat16): a view of the tensor's memory with no copy when it
 * is contiguous, else a copy in row-major order.
 */
export declare function _data(h: Raw): ArrayBufferView

/** `t.detach()`: the storage shared, outside autograd. */
export declare function _detach(h: Raw): Tensor

/** `t.device`: `cpu`. */
export declare function _device(h: Raw): string

/**
 * `t.dispose()`: free the memory now (Note [Tensor memory in V8]); twice
 * is fine.
 */
export declare function _dispose(h: Raw): void

/** `t.dtype`: `float32`, `int64`, `bool`, ... */
export declare function _dtype(h: Raw): string

/**
 * An External (pointing at a static byte), so tests can check that such
 * values, and the objects of other add-ons, are refused as tensors.
 */
export declare function _foreignExternal(): unknown

/**
 * `autograd.grad(outputs, inputs, gradOutputs?, options?)`: the gradients
 * of `outputs` with respect to `inputs`, returned (not accumulated).
 */
export declare function _grad(outputs: Tensor | Tensor[], inputs: Tensor | Tensor[], gradOutputs?: Tensor | Tensor[] | null, options?: { retainGraph?: boolean, createGraph?: boolean, allowUnused?: boolean }): (Tensor | null)[]

/** `t.grad`, or `null`. */
export declare function _grad_of(h: Raw): Tensor | null

/** `t.isContiguous()`. */
export declare function _isContiguous(h: Raw): boolean

/** `t.isDisposed`. */
export declare function _isDisposed(h: Raw): boolean

/** `t.isLeaf`. */
export declare function _isLeaf(h: Raw): boolean

/** `t.item()`: a number, or a boolean for `bool`. */
export declare function _item(h: Raw): number | boolean

/** `t.ndim`. */
export declare function _ndim(h: Raw): number

/** `t.numel()`. */
export declare function _numel(h: Raw): number

/**
 * The op-call function `lib/ops.js` uses (Note [The op call path]):
 * `call(id, self, kwargs, out, mask, ...args)`, tensors in as slot
 * indices, a single tensor result out as its slot index.
 */
export declare function _opCaller(): (id: number, self: unknown, kwargs: object | undefined, out: object, mask: number, ...args: unknown[]) => any

/** Leave the innermost grad mode. */
export declare function _popGradMode(): void

/**
 * Enter a grad mode (`lib/autograd.js` pairs it with `_popGradMode` in a
 * `finally`).
 */
export declare function _pushGradMode(enabled: boolean): void

/** `t.requiresGrad`. */
export declare function _requiresGrad(h: Raw): boolean

/** `t.grad = value` (a Tensor or `null`). */
export declare function _setGrad(h: Raw, value: Raw): void

/** `t.requiresGrad = value` (leaves only, as in torch). */
export declare function _setRequiresGrad(h: Raw, value: boolean): void

/** Register the JavaScript `Tensor` class (once, from `lib/tensor.js`). */
export declare function _setTensorClass(cls: Function): void

/** `t.shape`. */
export declare function _shape(h: Raw): Array<number>

/** `t.stride()`, in elements. */
export declare function _stride(h: Raw): Array<number>

/**
 * `t.toArray()`: nested arrays of numbers (int64 beyond 2^53 loses
 * precision; `data()` is exact) or booleans.
 */
export declare function _toArray(h: Raw): any

/** `t.toString()`, as torch prints it: `tensor([1., 2.])`. */
export declare function _toString(h: Raw): string

/** One argument of an overload. */
export interface ArgInfo {
  /** Its name in the schema (`self`, `dim`). */
  name: string
  /** Its schema type (`Tensor`, `int[1]?`, `Scalar`). */
  type: string
  /** It has a default: it may be left out. */
  hasDefault: boolean
  /** Declared after `*`: only by name, in the options object. */
  kwargOnly: boolean
}

/** Options of `backward`. */
export interface BackwardOptions {
  /** Keep the graph for another backward (default: `createGraph`). */
  retainGraph?: boolean
  /** Record the backward pass itself, for higher derivatives. */
  createGraph?: boolean
}

/** Options of `fromTypedArray`. */
export interface FromArrayOptions {
  /**
   * The dtype, where the array's type does not say it: `bool` for a
   * Uint8Array of 0s and 1s, `float16`/`bfloat16` for a Uint16Array of
   * their bits.
   */
  dtype?: string
  /** Copy instead of sharing the memory. */
  copy?: boolean
}

/**
 * A tensor over a TypedArray's memory (Note [Shared JavaScript memory]),
 * shaped `shape` (default: one dimension of the array's length).
 */
export declare function fromTypedArray(array: ArrayBufferView, shape?: number[], options?: { dtype?: string, copy?: boolean }): Tensor

/** Options of `autograd.grad`. */
export interface GradOptions {
  /** Keep the graph for another backward (default: `createGraph`). */
  retainGraph?: boolean
  /** Record the backward pass, for higher derivatives. */
  createGraph?: boolean
  /** Give `null` for inputs the outputs do not depend on. */
  allowUnused?: boolean
}

/** Whether autograd records ops now (`torch.is_grad_enabled()`). */
export declare function isGradEnabled(): boolean

/** One op as the JavaScript layer generates it. */
export interface OpInfo {
  /** The id `_call` takes. */
  id: number
  /** torch's name (`log_softmax`). */
  name: string
  /** Also a `Tensor` method. */
  isMethod: boolean
  /** Writes and returns `self`: the call returns the object it was given. */
  writesSelf: boolean
  /** The position of a trailing size list that may be given as numbers. */
  varargSizes?: number
  /** A creation op: takes `requiresGrad`. */
  creation: boolean
  /** The overloads' schemas, for documentation. */
  schemas: Array<string>
  /** The overloads' arguments and result types, for declarations. */
  overloads: Array<OverloadInfo>
  /** The result names of a multi-result overload (`values`, `indices`). */
  returnNames: Array<string>
}

/** One overload's signature. */
export interface OverloadInfo {
  /** The arguments in order. */
  args: Array<ArgInfo>
  /** The result types. */
  returns: Array<string>
}

/** The package version. */
export declare function version(): string
