"""``torch.export.graph_signature``: what each placeholder and each output
of an exported graph stands for (a parameter, a buffer, a user input, a
buffer the graph writes), as torch's classes."""

import dataclasses
from enum import Enum, auto

__all__ = ["ConstantArgument", "CustomObjArgument", "ExportGraphSignature", "InputKind",
           "InputSpec", "OutputKind", "OutputSpec", "SymIntArgument", "TensorArgument",
           "TokenArgument"]


@dataclasses.dataclass
class TensorArgument:
    name: str


@dataclasses.dataclass
class TokenArgument:
    name: str


@dataclasses.dataclass
class SymIntArgument:
    name: str


@dataclasses.dataclass
class CustomObjArgument:
    name: str
    class_fqn: str
    fake_val: object = None


@dataclasses.dataclass
class ConstantArgument:
    name: str
    value: object


class InputKind(Enum):
    USER_INPUT = auto()
    PARAMETER = auto()
    BUFFER = auto()
    CONSTANT_TENSOR = auto()
    CUSTOM_OBJ = auto()
    TOKEN = auto()


class OutputKind(Enum):
    USER_OUTPUT = auto()
    LOSS_OUTPUT = auto()
    BUFFER_MUTATION = auto()
    PARAMETER_MUTATION = auto()
    GRADIENT_TO_PARAMETER = auto()
    GRADIENT_TO_USER_INPUT = auto()
    USER_INPUT_MUTATION = auto()
    TOKEN = auto()


@dataclasses.dataclass
class InputSpec:
    kind: InputKind
    arg: object
    target: object
    persistent: object = None

    def __post_init__(self):
        if self.kind == InputKind.BUFFER and self.persistent is None:
            raise AssertionError("InputSpec: a buffer's spec must say whether it is persistent")

    def __str__(self):
        target = "" if self.target is None else f" target='{self.target}'"
        persistent = "" if self.persistent is None else f" persistent={self.persistent}"
        return f"{self.arg.name}: {self.kind.name}{target}{persistent}"


@dataclasses.dataclass
class OutputSpec:
    kind: OutputKind
    arg: object
    target: object

    def __str__(self):
        target = "" if self.target is None else f" target='{self.target}'"
        return f"{self.arg.name}: {self.kind.name}{target}"


@dataclasses.dataclass
class ExportGraphSignature:
    """The placeholders of an exported graph in order (``input_specs``)
    and its outputs (``output_specs``)."""

    input_specs: list
    output_specs: list

    def _inputs(self, kind):
        return [s for s in self.input_specs if s.kind == kind]

    @property
    def parameters(self):
        return [s.target for s in self._inputs(InputKind.PARAMETER)]

    @property
    def buffers(self):
        return [s.target for s in self._inputs(InputKind.BUFFER)]

    @property
    def non_persistent_buffers(self):
        return [s.target for s in self._inputs(InputKind.BUFFER) if s.persistent is False]

    @property
    def lifted_tensor_constants(self):
        return [s.target for s in self._inputs(InputKind.CONSTANT_TENSOR)]

    @property
    def lifted_custom_objs(self):
        return [s.target for s in self._inputs(InputKind.CUSTOM_OBJ)]

    @property
    def user_inputs(self):
        out = []
        for s in self._inputs(InputKind.USER_INPUT):
            out.append(s.arg.value if isinstance(s.arg, ConstantArgument) else s.arg.name)
        return out

    @property
    def user_outputs(self):
        out = []
        for s in self.output_specs:
            if s.kind == OutputKind.USER_OUTPUT:
                out.append(s.arg.value if isinstance(s.arg, ConstantArgument) else s.arg.name)
        return out

    @property
    def inputs_to_parameters(self):
        return {s.arg.name: s.target for s in self._inputs(InputKind.PARAMETER)}

    @property
    def inputs_to_buffers(self):
        return {s.arg.name: s.target for s in self._inputs(InputKind.BUFFER)}

    @property
    def inputs_to_lifted_tensor_constants(self):
        return {s.arg.name: s.target for s in self._inputs(InputKind.CONSTANT_TENSOR)}

    @property
    def inputs_to_lifted_custom_objs(self):
        return {s.arg.name: s.target for s in self._inputs(InputKind.CUSTOM_OBJ)}

    @property
    def buffers_to_mutate(self):
        return {s.arg.name: s.target for s in self.output_specs
                if s.kind == OutputKind.BUFFER_MUTATION}

    @property
    def parameters_to_mutate(self):
        return {s.arg.name: s.target for s in self.output_specs
                if s.kind == OutputKind.PARAMETER_MUTATION}

    @property
    def user_inputs_to_mutate(self):
        return {s.arg.name: s.target for s in self.output_specs
                if s.kind == OutputKind.USER_INPUT_MUTATION}

    @property
    def input_tokens(self):
        return [s.arg.name for s in self._inputs(InputKind.TOKEN)]

    @property
    def output_tokens(self):
        return [s.arg.name for s in self.output_specs if s.kind == OutputKind.TOKEN]

    def __str__(self):
        ins = "\n".join("    " + str(s) for s in self.input_specs)
        outs = "\n".join("    " + str(s) for s in self.output_specs)
        return f"\n# inputs\n{ins}\n\n# outputs\n{outs}\n"
