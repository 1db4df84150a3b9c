// The package's declarations: the native classes (native.d.ts, generated
// by napi-rs's build), every op (ops.d.ts, generated from the schemas by
// scripts/gen-types.js), and the JavaScript helpers declared here.
import { ScriptModule as NativeScriptModule } from './native'
import { Tensor } from './tensor'
import { DType } from './ops'

export { Tensor } from './tensor'
export { fromTypedArray, isGradEnabled } from './native'
export * from './ops'

/** The package version. */
export declare const version: string

/** Options of `tensor()`. */
export interface TensorOptions {
  dtype?: DType
  requiresGrad?: boolean
}

/** A new tensor from nested arrays of numbers, booleans or BigInts, or a TypedArray (copied). */
export declare function tensor (data: unknown, options?: TensorOptions): Tensor

/** Run `fn` with autograd off (`with torch.no_grad():`). */
export declare function noGrad<T> (fn: () => T): T
/** Run `fn` with autograd on (`with torch.enable_grad():`). */
export declare function enableGrad<T> (fn: () => T): T

export declare const autograd: {
  /** `torch.autograd.grad`: gradients of `outputs` with respect to `inputs`, returned. */
  grad (outputs: Tensor | Tensor[], inputs: Tensor | Tensor[], gradOutputs?: Tensor | Tensor[] | null,
    options?: { retainGraph?: boolean, createGraph?: boolean, allowUnused?: boolean }): (Tensor | null)[]
}

/** A saved program (`torch.jit.ScriptModule`), loaded from a file. */
export declare class ScriptModule extends NativeScriptModule {
  /** Run the program: one output as a Tensor, several as an array. */
  forward (...inputs: Tensor[]): Tensor | Tensor[]
  /** `forward` on libuv's thread pool: the event loop keeps running. */
  forwardAsync (...inputs: Tensor[]): Promise<Tensor | Tensor[]>
  eval (): this
  train (mode?: boolean): this
  parameters (): Tensor[]
}

export declare const jit: {
  load (path: string): ScriptModule
  /** `torch.jit.optimize_for_inference`: `mod` goes to eval mode; returns a frozen, optimised copy. */
  optimizeForInference (mod: ScriptModule): ScriptModule
}
export declare const ops: { call (name: string, ...args: unknown[]): any }
