"""``nn.utils.fusion``: fold an eval-mode batch norm into the convolution
or linear layer before it (torch's formulas)."""

import copy

from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _ft():
    import ferrotorch

    return ferrotorch


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` that computes ``bn(conv(x))`` (both in eval mode)."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The fused convolution's weight and bias."""
    ft = _ft()
    conv_dtype, bn_dtype = conv_w.dtype, bn_rm.dtype
    if conv_b is None:
        conv_b = ft.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ft.ones_like(bn_rm)
    if bn_b is None:
        bn_b = ft.zeros_like(bn_rm)
    var_rsqrt = ft.rsqrt(bn_rv + bn_eps)
    shape = [1] * conv_w.dim()
    shape[1 if transpose else 0] = -1
    w = (conv_w * (bn_w * var_rsqrt).reshape(shape)).to(dtype=conv_dtype)
    b = ((conv_b - bn_rm) * var_rsqrt * bn_w + bn_b).to(dtype=conv_dtype if conv_b is not None else bn_dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` that computes ``bn(linear(x))`` (eval mode)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features == bn.num_features or bn.num_features == 1")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The fused linear layer's weight and bias."""
    ft = _ft()
    if linear_b is None:
        linear_b = ft.zeros_like(bn_rm)
    scale = bn_w * ft.rsqrt(bn_rv + bn_eps)
    w = linear_w * scale.unsqueeze(-1)
    b = (linear_b - bn_rm) * scale + bn_b
    return Parameter(w, linear_w.requires_grad), Parameter(b, linear_b.requires_grad)
