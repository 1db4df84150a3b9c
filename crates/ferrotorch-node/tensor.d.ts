// The Tensor class of lib/tensor.js (a JavaScript class over a native
// handle, Note [Tensor handles]); its op methods are declared in ops.d.ts.

/** A tensor (`torch.Tensor`): an n-dimensional array over shared, strided storage, with autograd. */
export declare class Tensor {
  private constructor ()
  /** The sizes, as an array of numbers. */
  get shape (): number[]
  /** The element type's name: `float32`, `int64`, `bool`, ... */
  get dtype (): string
  /** The device: `cpu`. */
  get device (): string
  /** The number of dimensions. */
  get ndim (): number
  /** Whether autograd records ops on it. */
  get requiresGrad (): boolean
  set requiresGrad (value: boolean)
  /** Whether it is a leaf of the autograd graph. */
  get isLeaf (): boolean
  /** Its accumulated gradient, or `null`. */
  get grad (): Tensor | null
  set grad (value: Tensor | null)
  /** Whether `dispose()` was called. */
  get isDisposed (): boolean
  /** The number of elements. */
  numel (): number
  /** The number of dimensions. */
  dim (): number
  /** The strides, in elements. */
  stride (): number[]
  /** Whether the elements are contiguous in row-major order. */
  isContiguous (): boolean
  /** Printed as torch prints it: `tensor([1., 2.])`. */
  toString (): string
  /** The value of a one-element tensor: a number, or a boolean for bool. */
  item (): number | boolean
  /** The elements as nested arrays (`t.tolist()`). */
  toArray (): any
  /** The elements as a TypedArray: a view with no copy when contiguous. */
  data (): ArrayBufferView
  /** Backward from this tensor. */
  backward (gradient?: Tensor | null, options?: { retainGraph?: boolean, createGraph?: boolean }): void
  /** A tensor sharing the storage, outside autograd. */
  detach (): Tensor
  /** Free the memory now; later use throws. */
  dispose (): void
  /** Set `requiresGrad` and return the tensor (`t.requires_grad_()`). */
  requiresGrad_ (requiresGrad?: boolean): this
  requires_grad_ (requiresGrad?: boolean): this
  /** The elements as nested arrays (what `JSON.stringify` writes). */
  toJSON (): any
}
