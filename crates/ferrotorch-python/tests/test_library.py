"""Issue 24, custom ops from Python: torch.library.custom_op with schema
inference, register_kernel / register_fake / register_autograd
(gradchecked), torch.library.Library, torch.ops namespaces and overload
packets, errors that keep their Python type, and custom ops traced, saved
and loaded. Expected schemas are the strings torch 2.15's infer_schema
prints for the same functions."""

import os
from typing import List, Optional, Sequence

import pytest

import ferrotorch as torch
from ferrotorch import Tensor
from ferrotorch.library import custom_op, infer_schema


@custom_op("ft_pytest::scaled_sin", mutates_args=())
def scaled_sin(x: Tensor, scale: float = 1.0) -> Tensor:
    return torch.sin(x) * scale


def _setup(ctx, inputs, output):
    x, scale = inputs
    ctx.save_for_backward(x)
    ctx.scale = scale


def _backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * x.cos() * ctx.scale, None


scaled_sin.register_autograd(_backward, setup_context=_setup)


@scaled_sin.register_fake
def _(x, scale=1.0):
    return torch.empty_like(x)


def test_schemas_are_inferred_as_torch_infers_them():
    def f(x: Tensor, y: Optional[Tensor], n: int, s: float = 1.5, *, flag: bool = False,
          name: str = "a") -> Tensor:
        return x

    assert infer_schema(f, mutates_args=()) == \
        '(Tensor x, Tensor? y, SymInt n, float s=1.5, *, bool flag=False, str name="a") -> Tensor'

    def g(xs: List[Tensor], sizes: Sequence[int], out: Tensor) -> None:
        pass

    assert infer_schema(g, mutates_args=["out"]) == "(Tensor[] xs, SymInt[] sizes, Tensor(a0!) out) -> ()"

    def h(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
        return a, b

    assert infer_schema(h, mutates_args=(), op_name="h") == "h(Tensor a, Tensor b) -> (Tensor, Tensor)"
    with pytest.raises(ValueError, match="no type annotation"):
        infer_schema(lambda x: x, mutates_args=())
    with pytest.raises(ValueError, match="does not take"):
        infer_schema(h, mutates_args=["c"])

    def bad(x: Tensor, d: dict) -> Tensor:
        return x

    with pytest.raises(ValueError, match="unsupported type"):
        infer_schema(bad, mutates_args=())


def test_a_custom_op_runs_and_its_formula_passes_gradcheck():
    x = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
    y = scaled_sin(x, 2.0)
    assert torch.allclose(y, torch.sin(x) * 2.0)
    y.sum().backward()
    assert torch.allclose(x.grad, 2.0 * torch.cos(x.detach()))
    assert torch.autograd.gradcheck(lambda t: scaled_sin(t, 3.0), (x,))
    # through torch.ops, by keyword, and by its overload packet's default
    assert torch.allclose(torch.ops.ft_pytest.scaled_sin(x, scale=2.0), y)
    assert torch.allclose(torch.ops.ft_pytest.scaled_sin.default(x, 2.0), y)


def test_an_op_without_a_formula_is_not_differentiable_and_says_so():
    @custom_op("ft_pytest::no_grad_exp", mutates_args=())
    def no_grad_exp(x: Tensor) -> Tensor:
        return x.exp()

    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="backward through ft_pytest::no_grad_exp"):
        no_grad_exp(x).sum().backward()


def test_fake_functions_and_kernels_for_a_device():
    out = torch._C._call_fake("ft_pytest::scaled_sin", (torch.zeros(2, 7), 1.0))
    assert tuple(out.shape) == (2, 7)

    @custom_op("ft_pytest::which", mutates_args=())
    def which(x: Tensor) -> Tensor:
        return x + 1

    assert which(torch.zeros(1)).tolist() == [1.0]

    @which.register_kernel("cpu")
    def _(x):
        return x + 100

    assert which(torch.zeros(1)).tolist() == [100.0]
    with pytest.raises(ValueError, match="no 'cuda' device"):
        which.register_kernel("cuda", lambda x: x)


def test_a_mutating_op_writes_its_input():
    @custom_op("ft_pytest::fill_one_", mutates_args=["x"])
    def fill_one_(x: Tensor) -> None:
        x.fill_(1.0)

    z = torch.zeros(3)
    v = z._version
    assert fill_one_(z) is None
    assert z.tolist() == [1.0, 1.0, 1.0] and z._version > v
    assert torch.ops.ft_pytest.fill_one_.default._schema == "ft_pytest::fill_one_(Tensor(a0!) x) -> ()"


def test_the_library_layer_and_torch_ops_namespaces():
    lib = torch.library.Library("ft_pylib", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.define("twice.scaled(Tensor x, float s) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    lib.impl("twice.scaled", lambda x, s: x * 2 * s, "CompositeExplicitAutograd")
    ones = torch.ones(2)
    assert torch.ops.ft_pylib.twice(ones).tolist() == [2.0, 2.0]
    # the arguments pick the overload, as torch's parser does
    assert torch.ops.ft_pylib.twice(ones, 3.0).tolist() == [6.0, 6.0]
    assert torch.ops.ft_pylib.twice.scaled(ones, 0.5).tolist() == [1.0, 1.0]
    assert sorted(torch.ops.ft_pylib.twice.overloads()) == ["default", "scaled"]
    with pytest.raises(AttributeError, match="has no attribute 'nothere'"):
        torch.ops.ft_pylib.nothere
    with pytest.raises(AttributeError, match="no overload name 'nope'"):
        torch.ops.ft_pylib.twice.nope
    with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY"):
        torch.library.Library("ft_pylib", "DEF")
    with pytest.raises(RuntimeError, match="reserved"):
        torch.library.Library("aten", "FRAGMENT")
    impl = torch.library.Library("ft_pylib", "IMPL")
    with pytest.raises(RuntimeError, match="cannot define"):
        impl.define("more(Tensor x) -> Tensor")
    # built-in ops are there too
    assert torch.ops.aten.add.Tensor(ones, ones).tolist() == [2.0, 2.0]
    assert torch.ops.aten.add(ones, ones, alpha=3).tolist() == [4.0, 4.0]


def test_a_kernels_python_exception_keeps_its_type():
    lib = torch.library.Library("ft_pyerr", "DEF")
    lib.define("boom(Tensor x) -> Tensor")

    def boom(x):
        raise KeyError("boom from the kernel")

    lib.impl("boom", boom, "CPU")
    with pytest.raises(KeyError, match="boom from the kernel"):
        torch.ops.ft_pyerr.boom(torch.ones(1))
    lib.define("two(Tensor x) -> (Tensor, Tensor)")
    lib.impl("two", lambda x: x, "CPU")  # one value for two declared
    with pytest.raises(TypeError):
        torch.ops.ft_pyerr.two(torch.ones(1))


def test_custom_ops_trace_save_and_load(tmp_path):
    def f(x):
        return scaled_sin(x, 0.5).tanh()

    x = torch.randn(4)
    traced = torch.jit.trace(f, (x,))
    assert "ft_pytest::scaled_sin" in str(traced.graph)
    path = os.path.join(tmp_path, "custom.pt")
    traced.save(path)
    loaded = torch.jit.load(path)
    x2 = torch.randn(6)
    assert torch.equal(loaded(x2), f(x2))


def test_compiled_graphs_call_rust_custom_ops_natively_without_the_gil():
    torch._C._register_test_gil_op()

    def f(x):
        return torch.ops.ft_py_test.gil_held(x)

    x = torch.ones(3)
    assert f(x).item() == 1  # eager, from Python: the GIL is held
    traced = torch.jit.trace(f, (x,), check_trace=False)
    assert "ft_py_test::gil_held" in str(traced.graph)
    assert traced(x).item() == 0  # the graph runs natively
    compiled = torch.compile(f)
    compiled(x)  # traced (eagerly)
    assert compiled(x).item() == 0


def _build_plugin(tmp_path, *flags):
    import os
    import shutil
    import subprocess

    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        pytest.skip("no C compiler")
    root = os.path.join(os.path.dirname(__file__), "..", "..", "ferrotorch-c")
    out = tmp_path / f"libftplugin{len(flags)}.so"
    subprocess.run([cc, "-std=c11", "-O1", "-shared", "-fPIC", *flags,
                    "-I", os.path.join(root, "include"),
                    os.path.join(root, "tests", "c", "plugin.c"), "-o", str(out)], check=True)
    return out


def test_ops_load_library_loads_a_plugin_written_in_c(tmp_path):
    so = _build_plugin(tmp_path)
    torch.ops.load_library(so)
    assert str(so.resolve()) in torch.ops.loaded_libraries
    x, y = torch.tensor([1.0, 2.0]), torch.tensor([10.0, 20.0])
    assert torch.ops.ftplugin.axpy(x, y, a=3.0).tolist() == [13.0, 26.0]
    assert torch.ops.ftplugin.twice(x).tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="same shape"):
        torch.ops.ftplugin.axpy(x, torch.ones(3))
    # a plugin op traces, and the graph runs it natively
    traced = torch.jit.trace(lambda a, b: torch.ops.ftplugin.axpy(a, b) * 2, (x, y))
    assert "ftplugin::axpy" in str(traced.graph)
    assert traced(y, x).tolist() == [22.0, 44.0]


def test_a_plugin_of_another_abi_version_is_refused(tmp_path):
    so = _build_plugin(tmp_path, "-DFT_TEST_ABI=77")
    with pytest.raises(RuntimeError, match="plugin ABI version 77"):
        torch.ops.load_library(so)
    with pytest.raises(OSError):
        torch.ops.load_library(tmp_path / "missing.so")
