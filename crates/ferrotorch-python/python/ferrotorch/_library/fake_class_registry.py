"""``torch._library.fake_class_registry``: Python "fake" classes standing
in for custom classes (seeds/004): ``register_fake_class("ns::Name")``
on a class with ``__obj_unflatten__``; ``maybe_to_fake_obj`` turns a real
object into its fake through the real one's ``__obj_flatten__``.

ferrotorch traces with the real objects (their methods become graph nodes,
Note [Objects in graphs]), so no trace needs a fake; fakes serve what they
serve in PyTorch besides: running a fake op (``register_fake`` of an op
taking an object) and inspecting an object's state without touching it."""

_registry = {}


def _key(qualname):
    name = qualname.removeprefix("__torch__.torch.classes.")
    return name.replace(".", "::", 1) if "::" not in name else name


def register_fake_class(qualname, fake_class=None):
    """Register ``fake_class`` as the fake of custom class ``qualname``
    (``ns::Name``); usable as a decorator. The class needs a classmethod
    ``__obj_unflatten__(flat)``, and a fake of every method of the real
    class it is used with."""

    def inner(cls):
        if not hasattr(cls, "__obj_unflatten__"):
            raise RuntimeError(
                f"Expect {cls} to have a classmethod __obj_unflatten__.")
        from .. import _C

        key = _key(qualname)
        if not _C._class_exists(key):
            raise RuntimeError(f"Tried to register a fake class for {qualname}, which is not registered")
        _registry[key] = cls
        return cls

    return inner if fake_class is None else inner(fake_class)


def deregister_fake_class(qualname):
    """Forget the fake class of ``qualname``."""
    return _registry.pop(_key(qualname), None)


def has_fake_class(qualname):
    """Whether ``qualname`` has a fake class."""
    return _key(qualname) in _registry


def find_fake_class(qualname):
    """The fake class of ``qualname``, or None."""
    return _registry.get(_key(qualname))


def maybe_to_fake_obj(fake_mode, x):
    """``x`` (a ``torch.ScriptObject``) as an object of its fake class:
    ``fake_class.__obj_unflatten__(x.__obj_flatten__())``; ``x`` itself
    when its class has no fake. ``fake_mode`` is accepted for torch's
    signature (ferrotorch's fakes hold the flattened real tensors)."""
    from .. import _C

    if not isinstance(x, _C.ScriptObject):
        return x
    fake_cls = find_fake_class(x._class_name)
    if fake_cls is None:
        return x
    if not x._has_method("__obj_flatten__"):
        raise RuntimeError(
            f"{x._class_name} has a fake class but no __obj_flatten__ method to build it from")
    fake = fake_cls.__obj_unflatten__(x.__obj_flatten__())
    fake.real_obj = x
    return fake
