"""``torch.classes``: custom classes registered in Rust with
``Library::class_`` (TorchBind; Note [Custom classes] in
``crates/ferrotorch-core``).

``torch.classes.ns.Name(*args)`` constructs an object (a
``torch.ScriptObject``) through the class's ``__init__``; its methods are
attributes of the object, and each call is an op call through the
dispatcher, so tracing records it (Note [Objects in graphs] in
``crates/ferrotorch-jit``)."""

import types

from . import _C

ScriptObject = _C.ScriptObject


class ScriptClass:
    """A registered class (``torch.ScriptClass``): call it to construct."""

    def __init__(self, name):
        self._name = name

    @property
    def qualified_name(self):
        ns, cls = self._name.split("::")
        return f"__torch__.torch.classes.{ns}.{cls}"

    def __call__(self, *args, **kwargs):
        return _C._construct_class(self._name, args, kwargs)

    def _method_schemas(self):
        """``{method: schema}`` of the class's methods."""
        return dict(_C._class_schemas(self._name))

    def __repr__(self):
        return f"<torch.ScriptClass object for {self.qualified_name}>"


class _ClassNamespace(types.ModuleType):
    """The classes of one namespace (``torch.classes.MyCustomClass``)."""

    def __init__(self, name):
        super().__init__("torch.classes." + name)
        self.name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        full = f"{self.name}::{attr}"
        if not _C._class_exists(full):
            raise RuntimeError(
                f"Tried to instantiate class '{self.name}.{attr}', but it does not exist! "
                "Ensure that it is registered via torch::class_")
        return ScriptClass(full)


class _Classes(types.ModuleType):
    """``torch.classes``."""

    __file__ = "_classes.py"

    def __init__(self):
        super().__init__("torch.classes")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        namespace = _ClassNamespace(name)
        setattr(self, name, namespace)
        return namespace

    @property
    def loaded_libraries(self):
        from ._op_namespaces import ops

        return ops.loaded_libraries

    def load_library(self, path):
        """``torch.classes.load_library``: ``torch.ops.load_library``."""
        from ._op_namespaces import ops

        ops.load_library(path)


classes = _Classes()
