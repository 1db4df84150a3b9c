"""Custom classes (TorchBind) from Python, as seeds/004 uses them: the
TensorQueue worked example (registered in Rust), its methods, pickling,
deepcopy and ferrotorch.save, the seed's Mod and ForEachAdd traced and
saved, the fake-class registry, and the seed's three PyTorch limitations,
each checked against eager and against the wrong answer PyTorch's
captured graph gives."""

import copy
import io
import pickle

import pytest

import ferrotorch as torch

torch._C._register_tensor_queue()


def empty_tensor_queue():
    return torch.classes.MyCustomClass.TensorQueue(torch.empty(0).fill_(-1))


def close(a, b):
    return torch.allclose(a, b, atol=1e-6)


def test_the_seeds_tensor_queue():
    tq = torch.classes.MyCustomClass.TensorQueue(torch.empty(0).fill_(-1))
    assert isinstance(tq, torch.ScriptObject)
    x = torch.randn(2, 3)
    tq.push(x.sin())
    tq.push(x.cos())
    assert tq.size() == 2
    assert close(tq.top(), x.sin())
    assert close(tq.pop(), x.sin())
    raw = tq.get_raw_queue()
    assert len(raw) == 1 and close(raw[0], x.cos())
    copy_ = tq.clone_queue()
    assert copy_ is not tq and copy_.size() == 1
    tq.pop()
    assert tq.pop().tolist() == []  # empty: the initial tensor
    assert tq._qualified_name == "__torch__.torch.classes.MyCustomClass.TensorQueue"
    assert "push" in tq._method_names()


def test_what_goes_in_comes_out_as_itself():
    tq = empty_tensor_queue()
    a, b = torch.ones(2), torch.zeros(3)
    tq.push(a)
    tq.push(b)
    assert tq.get_raw_queue()[1] is b
    assert tq.pop() is a  # True in eager PyTorch too
    out = torch.ops.MyCustomClass.for_each_add_(tq, torch.ones(1))
    assert out is None
    assert tq.top() is b and b.tolist() == [1.0, 1.0, 1.0]


class Mod(torch.nn.Module):
    def forward(self, tq, x):
        tq.push(x.sin())
        tq.push(x.cos())
        poped_t = tq.pop()
        assert torch.allclose(poped_t, x.sin())
        return tq, poped_t


def test_the_seeds_mod_traced_and_saved(tmp_path):
    tq, poped_t = Mod()(empty_tensor_queue(), torch.randn(2, 3))
    assert tq.size() == 1
    traced = torch.jit.trace(Mod(), (empty_tensor_queue(), torch.randn(2, 3)))
    text = str(traced.graph)
    assert text.count("prim::with_effects") == 3, text
    assert "MyCustomClass::TensorQueue::push" in text
    tq2, x = empty_tensor_queue(), torch.randn(2, 3)
    out_tq, popped = traced(tq2, x)
    assert out_tq is tq2 and tq2.size() == 1
    assert close(popped, x.sin())
    path = tmp_path / "mod.pt"
    torch.jit.save(traced, path)
    loaded = torch.jit.load(path)
    tq3, x3 = empty_tensor_queue(), torch.randn(2, 3)
    out_tq, popped = loaded(tq3, x3)
    assert out_tq is tq3 and close(popped, x3.sin()) and tq3.size() == 1
    with pytest.raises(TypeError, match="expected an object of"):
        loaded(torch.randn(2, 3), x3)


class ForEachAdd(torch.nn.Module):
    def forward(self, tq, a):
        torch.ops.MyCustomClass.for_each_add_(tq, a)
        return tq


def test_the_seeds_for_each_add():
    def filled():
        tq = empty_tensor_queue()
        for _ in range(10):
            tq.push(torch.zeros(1))
        return tq

    traced = torch.jit.trace(ForEachAdd(), (filled(), torch.ones(1)))
    assert "MyCustomClass::for_each_add_" in str(traced.graph)
    tq = filled()
    output_tq = traced(tq, torch.ones(1))
    assert output_tq is tq
    assert output_tq.size() == 10
    assert output_tq.top().tolist() == [1.0]
    # and as a method of the class
    tq.for_each_add_(torch.ones(1))
    assert tq.top().tolist() == [2.0]


def test_pickle_deepcopy_and_save():
    tq = empty_tensor_queue()
    a = torch.tensor([1.0, 2.0])
    tq.push(a)
    again = pickle.loads(pickle.dumps(tq))
    assert again is not tq and again.size() == 1 and again.top().tolist() == [1.0, 2.0]
    deep = copy.deepcopy(tq)
    a.add_(1)
    assert deep.top().tolist() == [1.0, 2.0]  # a copy of the state
    assert tq.top().tolist() == [2.0, 3.0]
    buf = io.BytesIO()
    torch.save({"queue": tq, "w": torch.ones(2)}, buf)
    buf.seek(0)
    loaded = torch.load(buf)
    assert loaded["queue"].size() == 1 and loaded["queue"].top().tolist() == [2.0, 3.0]
    assert loaded["w"].tolist() == [1.0, 1.0]


def test_flatten_and_the_fake_class_registry():
    tq = empty_tensor_queue()
    tq.push(torch.ones(2))
    flat = tq.__obj_flatten__()
    assert flat[0][0] == "queue" and flat[1][0] == "init_tensor_"

    @torch._library.register_fake_class("MyCustomClass::TensorQueue")
    class FakeTensorQueue:
        def __init__(self, queue, init_tensor_):
            self.queue = queue
            self.init_tensor_ = init_tensor_

        def push(self, tensor):
            self.queue.append(tensor)

        def pop(self):
            if len(self.queue) > 0:
                return self.queue.pop(0)
            return self.init_tensor_

        def size(self):
            return len(self.queue)

        @classmethod
        def __obj_unflatten__(cls, flattened_tq):
            return cls(**dict(flattened_tq))

    try:
        from ferrotorch._library.fake_class_registry import maybe_to_fake_obj
        fake = maybe_to_fake_obj(None, tq)
        assert isinstance(fake, FakeTensorQueue) and fake.real_obj is tq
        assert fake.size() == 1
        fake.push(torch.zeros(1))
        assert fake.size() == 2 and tq.size() == 1  # the real one is untouched
        assert fake.pop().tolist() == [1.0, 1.0]
    finally:
        torch._library.fake_class_registry.deregister_fake_class("MyCustomClass::TensorQueue")


def test_limitation_1_a_write_after_push_keeps_eager_semantics():
    def f(tq, a):
        tq.push(a)
        a.sin_()
        b = tq.pop()
        return a + b

    a0 = torch.randn(4)
    eager = f(empty_tensor_queue(), a0.clone())
    assert close(eager, 2 * a0.sin())
    traced = torch.jit.trace(f, (empty_tensor_queue(), torch.randn(4)))
    got = traced(empty_tensor_queue(), a0.clone())
    assert close(got, eager)
    # PyTorch's captured graph pushes a copy: sin(a) + a
    assert not close(got, a0.sin() + a0)


def test_limitation_2_is_compares_the_real_tensors():
    def f(tq, a):
        tq.push(a)
        if tq.pop() is a:
            return a + 1
        return a - 1

    a = torch.randn(3)
    assert close(f(empty_tensor_queue(), a), a + 1)  # eager
    traced = torch.jit.trace(f, (empty_tensor_queue(), torch.randn(3)))
    b = torch.randn(3)
    assert close(traced(empty_tensor_queue(), b), b + 1)  # PyTorch's graph: b - 1


def test_limitation_3_sizes_are_values_not_constants():
    def f(tq, x):
        return x + tq.size()

    def queue_of(n):
        tq = empty_tensor_queue()
        for _ in range(n):
            tq.push(torch.randn(3, 3))
        return tq

    traced = torch.jit.trace(f, (queue_of(2), torch.zeros(3)))
    assert "prim::NumToTensor" in str(traced.graph)
    x = torch.tensor([1.0, 2.0, 3.0])
    assert traced(queue_of(5), x).tolist() == [6.0, 7.0, 8.0]  # PyTorch's graph: x + 2
    buf = io.BytesIO()
    torch.jit.save(traced, buf)
    buf.seek(0)
    assert torch.jit.load(buf)(queue_of(7), x).tolist() == [8.0, 9.0, 10.0]


def test_errors_name_what_is_wrong():
    tq = empty_tensor_queue()
    with pytest.raises(TypeError, match="must be __torch__.torch.classes.MyCustomClass.TensorQueue"):
        torch.ops.MyCustomClass.for_each_add_(torch.ones(1), torch.ones(1))
    with pytest.raises(TypeError):
        tq.push(3)
    with pytest.raises(AttributeError, match="no attribute or method 'nope'"):
        tq.nope
    with pytest.raises(RuntimeError, match="does not exist"):
        torch.classes.MyCustomClass.Nope
    with pytest.raises(TypeError):
        torch.classes.MyCustomClass.TensorQueue("not a tensor")


def test_the_seeds_mod_under_compile():
    x = torch.randn(2, 3)
    tq, poped_t = torch.compile(Mod(), backend="eager", fullgraph=True)(empty_tensor_queue(), x)
    assert tq.size() == 1
    compiled = torch.compile(Mod(), fullgraph=True)
    tq = empty_tensor_queue()
    out, popped = compiled(tq, x)  # traced: runs once
    assert out is tq and tq.size() == 1 and close(popped, x.sin())
    out, popped = compiled(tq, x)  # the compiled graph, on the same queue
    assert tq.size() == 2 and close(popped, x.cos())


def test_an_object_a_module_holds_is_saved_by_its_state():
    class Holder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tq = empty_tensor_queue()
            self.tq.push(torch.tensor([2.0, 3.0]))

        def forward(self, x):
            return x * self.tq.top()

    traced = torch.jit.trace(Holder(), (torch.ones(2),))
    buf = io.BytesIO()
    torch.jit.save(traced, buf)
    buf.seek(0)
    loaded = torch.jit.load(buf)
    assert loaded(torch.tensor([1.0, 10.0])).tolist() == [2.0, 30.0]


def _build_class_plugin(tmp_path):
    import os
    import shutil
    import subprocess

    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        pytest.skip("no C compiler")
    root = os.path.join(os.path.dirname(__file__), "..", "..", "ferrotorch-c")
    out = tmp_path / "libftclass.so"
    subprocess.run([cc, "-std=c11", "-O1", "-shared", "-fPIC", "-pthread", "-I", os.path.join(root, "include"),
                    os.path.join(root, "tests", "c", "plugin_class.c"), "-o", str(out)], check=True)
    return out


class PluginMod(torch.nn.Module):
    def forward(self, tq, x):
        tq.push(x.sin())
        tq.push(x.cos())
        return tq, tq.pop()


def test_a_class_from_a_plugin_written_in_c(tmp_path):
    """seeds/004's TensorQueue written in C (ferrotorch-c/tests/c/
    plugin_class.c) and loaded at run time, used as the Rust one is."""
    torch.classes.load_library(_build_class_plugin(tmp_path))
    make = lambda: torch.classes.ftplugin.TensorQueue(torch.full((2,), -1.0))  # noqa: E731
    tq = make()
    assert isinstance(tq, torch.ScriptObject)
    assert tq._qualified_name == "__torch__.torch.classes.ftplugin.TensorQueue"
    x = torch.randn(2)
    tq.push(x)
    tq.push(x * 2)
    assert tq.size() == 2 and close(tq.top(), x)
    assert close(tq.pop(), x) and tq.size() == 1
    deep = copy.deepcopy(tq)
    again = pickle.loads(pickle.dumps(tq))
    assert close(tq.pop(), x * 2) and tq.pop().tolist() == [-1.0, -1.0]
    assert deep.size() == 1 and close(deep.top(), x * 2) and again.size() == 1
    assert [t.tolist() for t in again.get_raw_queue()] == [(x * 2).tolist()]
    with pytest.raises(TypeError, match="ftplugin::TensorQueue::push\\(\\): argument 'x' must be Tensor"):
        tq.push(3)
    # traced with the object as an input, saved, loaded, run again
    traced = torch.jit.trace(PluginMod(), (make(), torch.randn(2)))
    assert "ftplugin::TensorQueue::push" in str(traced.graph)
    path = tmp_path / "plugin_mod.pt"
    torch.jit.save(traced, path)
    loaded = torch.jit.load(path)
    q, y = make(), torch.randn(2)
    out_q, popped = loaded(q, y)
    assert out_q is q and q.size() == 1 and close(popped, y.sin()) and close(q.top(), y.cos())
