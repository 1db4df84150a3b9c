// Checked by `tsc --noEmit -p test/types` in the test suite: the
// declarations describe the package as a TypeScript user writes it.
import * as ft from '../../index'

const x: ft.Tensor = ft.ones([2, 3], { requiresGrad: true, dtype: 'float32' })
const y = ft.ones([2, 3], true)
const z = x.add(y, { alpha: 2 }).mul(3).sum()
z.backward()
const g: ft.Tensor | null = x.grad
const s: ft.Tensor = ft.sum(x, { dim: [1], keepdim: true })
const m = x.max({ dim: 1 })
const vals: ft.Tensor = m.values
const ls: ft.Tensor = x.logSoftmax(1)
const v: ft.Tensor = ft.arange(6).view(2, 3)
const shape: number[] = v.shape
const data = ft.fromTypedArray(new Float32Array([1, 2, 3, 4]), [2, 2])
const arr: ArrayBufferView = data.data()
const item = ft.tensor([[1, 2], [3, 4]], { dtype: 'float64' }).sum().item()
const r = ft.noGrad(() => x.mul(2))
const grads = ft.autograd.grad(x.pow(2).sum(), [x])
const m2 = new ft.ScriptModule('model.pt')
const out = m2.eval().forward(x)
const later: Promise<ft.Tensor | ft.Tensor[]> = m2.forwardAsync(x)
const sel = x.select(0, 1).narrow(0, 0, 2)
const dt: string = x.dtype
ft.manualSeed(0)
x.add_(1).zero_()
x.dispose()
void [g, s, vals, ls, shape, arr, item, r, grads, out, later, sel, dt]
const w: ft.Tensor = ft.zeros([2]).requiresGrad_()
void w
const ls2: ft.Tensor = ft.logSoftmax(ft.ones([2]), 0)
const v2: ft.Tensor = ft.var(ft.ones([2]))
void [ls2, v2]
