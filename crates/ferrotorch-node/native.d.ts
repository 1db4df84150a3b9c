
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
  _setTraining(mode: boolean): void
}

/**
 * A tensor (`torch.Tensor`): an n-dimensional array over shared, strided
 * storage, with autograd. Made by the creation functions and by ops.
 */
export declare class Tensor {
  /**
   * The elements as a TypedArray (Float32Array, BigInt64Array for
   * int64, Uint8Array for bool and uint8, Uint16Array of the bits for
   * float16/bfloat16): a view of the tensor's memory with no copy when
   * it is contiguous, else a copy in row-major order.
   */
  data(): ArrayBufferView
  /** The sizes (`t.shape`), as an array of numbers. */
  get shape(): Array<number>
  /** The element type's name: `float32`, `int64`, `bool`, ... */
  get dtype(): string
  /** The device: `cpu`. */
  get device(): string
  /** The number of dimensions. */
  get ndim(): number
  /** Whether autograd records ops on it (`t.requires_grad`). */
  get requiresGrad(): boolean
  /** Set `requires_grad` (only on leaves, as in torch). */
  set requiresGrad(value: boolean)
  /** Whether it is a leaf of the autograd graph. */
  get isLeaf(): boolean
  /** Its accumulated gradient (`t.grad`), or `null`. */
  get grad(): Tensor | null
  /** Set or clear the gradient. */
  set grad(value: Tensor | null)
  /** The number of elements. */
  numel(): number
  /** The number of dimensions (`t.dim()`). */
  dim(): number
  /** The strides, in elements. */
  stride(): Array<number>
  /** Whether its elements are laid out contiguously in row-major order. */
  isContiguous(): boolean
  /** Printed as torch prints it: `tensor([1., 2.])`. */
  toString(): string
  /**
   * The value of a one-element tensor (`t.item()`): a number, or a
   * boolean for `bool`.
   */
  item(): number | boolean
  /**
   * The elements as nested arrays (`t.tolist()`): numbers (int64 values
   * beyond 2^53 lose precision; `data()` gives them exactly) or booleans.
   */
  toArray(): any
  /**
   * Backward from this tensor (`t.backward(gradient, {retainGraph,
   * createGraph})`).
   */
  backward(gradient?: Tensor | null, options?: { retainGraph?: boolean, createGraph?: boolean }): void
  /** A tensor sharing the storage, outside autograd (`t.detach()`). */
  detach(): Tensor
  /**
   * Free the tensor's memory now (Note [Tensor memory in V8]); later
   * use throws. Disposing twice does nothing.
   */
  dispose(): void
  /** Whether `dispose()` was called. */
  get isDisposed(): boolean
}

/** Every op, for `lib/ops.js` to generate functions and methods from. */
export declare function _bindingOps(): Array<OpInfo>

/**
 * Call op `id` with `self` (a `Tensor`, or `undefined` for a function
 * call), positional `args` and keyword `kwargs` (Note [JavaScript
 * arguments]).
 */
export declare function _call(id: number, self: Tensor | undefined, args: unknown[], kwargs?: object): any

/**
 * Call an op by its name (`add`, `add.Tensor`, a custom op's
 * `ns::name`): the slow road, one name lookup per call, for ops the
 * generated functions do not cover (`ops.call` in `lib/ops.js`).
 */
export declare function _callByName(name: string, args: unknown[], kwargs?: object): any

/**
 * `autograd.grad(outputs, inputs, gradOutputs?, options?)`: the gradients
 * of `outputs` with respect to `inputs`, returned (not accumulated).
 */
export declare function _grad(outputs: Tensor | Tensor[], inputs: Tensor | Tensor[], gradOutputs?: Tensor | Tensor[] | null, options?: { retainGraph?: boolean, createGraph?: boolean, allowUnused?: boolean }): (Tensor | null)[]

/** Leave the innermost grad mode. */
export declare function _popGradMode(): void

/**
 * Enter a grad mode (`lib/autograd.js` pairs it with `_popGradMode` in a
 * `finally`).
 */
export declare function _pushGradMode(enabled: boolean): void

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
