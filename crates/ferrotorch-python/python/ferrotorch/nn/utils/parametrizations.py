"""``nn.utils.parametrizations``: ``orthogonal``, ``weight_norm`` and
``spectral_norm`` as parametrizations (``nn.utils.parametrize``), with
torch's maps, initialisation and state-dict keys."""

from enum import Enum, auto

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _ft():
    import ferrotorch

    return ferrotorch


def _is_orthogonal(Q, eps=None):
    ft = _ft()
    n, k = Q.size(-2), Q.size(-1)
    eps = 10.0 * n * ft.finfo(Q.dtype).eps
    return ft.allclose(Q.mH @ Q, ft.eye(k, dtype=Q.dtype), atol=eps)


def _make_orthogonal(A):
    """The Q of A = QR with diag(R) real and non-negative (A tall)."""
    ft = _ft()
    X, tau = ft.geqrf(A)
    Q = ft.linalg.householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        ft = _ft()
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = ft.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = ft.matrix_exp(A)
            else:
                Id = ft.eye(n, dtype=A.dtype)
                Q = ft.linalg.solve(ft.add(Id, A, alpha=-0.5), ft.add(Id, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = ft.linalg.householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if self._buffers.get("base") is not None:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q):
        ft = _ft()
        with no_grad():
            if tuple(Q.shape) != tuple(self.shape):
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")
                A, tau = ft.geqrf(Q)
                d = A.diagonal(dim1=-2, dim2=-1)
                s = d.sign()
                d.copy_(ft.where(tau == 0.0, -s, s))
                return A.mT if transpose else A
            if n == k:
                Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
            else:
                N = ft.randn(*(tuple(Q.size()[:-2]) + (n, n - k)), dtype=Q.dtype)
                Q = _make_orthogonal(ft.cat([Q, N], dim=-1))
            self.base = Q
            neg_id = ft.zeros_like(Q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to be
    orthogonal (or unitary), through the matrix exponential, the Cayley map
    or Householder reflectors."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dimension but ``dim`` (kept
    with size 1 elsewhere); over everything for ``dim=-1``."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        return v.contiguous().view(v.size(0), -1).norm(pow, dim=1).view(v.size(0), *([1] * (v.dim() - 1)))
    if dim == v.dim() - 1:
        return v.contiguous().view(-1, v.size(-1)).norm(pow, dim=0).view(*([1] * (v.dim() - 1)), v.size(-1))
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def _weight_norm(v, g, dim=0):
    """``v · g / ‖v‖`` with the norm over every dimension but ``dim``."""
    return v * (g / norm_except_dim(v, 2, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as ``g · v / ‖v‖`` (``original0`` is
    g, ``original1`` v); a state dict of the old ``nn.utils.weight_norm``
    (``weight_g``/``weight_v``) still loads."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def compat(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(compat)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.size()
            u = mat.new_empty(h).normal_(0, 1)
            v = mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat, n_power_iterations):
        ft = _ft()
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(ft.mv(mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ft.mv(mat.mH, self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        ft = _ft()
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        return weight / ft.vdot(u, ft.mv(mat, v))

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its largest singular value, estimated
    by power iteration (one step per training forward)."""
    from ..modules.conv import ConvTranspose2d
    from ..modules.volumetric import ConvTranspose1d, ConvTranspose3d

    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
