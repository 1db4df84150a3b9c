"""``AdaptiveLogSoftmaxWithLoss``: Grave et al.'s adaptive softmax — a
head over the frequent classes and one cluster token per tail, each tail
a two-layer projection of reduced width."""

from collections import namedtuple

from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities of the targets (and the mean loss) with classes
    split at ``cutoffs``; ``log_prob`` gives all classes, ``predict`` the
    most likely."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > (n_classes - 1)
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, dtype=dtype),
                                        Linear(hsz, osz, bias=False, dtype=dtype)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        targ_dim = target_.dim()
        if targ_dim == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        elif targ_dim == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = targ_dim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        used = 0
        n = target.size(0)
        output = input.new_zeros(n)
        gather = target.new_zeros(n)
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            lo, hi = bounds[i], bounds[i + 1]
            mask = (target >= lo) & (target < hi)
            rows = mask.nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            if i == 0:
                gather = gather.index_copy(0, rows, target[mask])
            else:
                relative = target[mask] - lo
                cluster_out = self.tail[i - 1](input.index_select(0, rows))
                gather = gather.index_fill(0, rows, self.shortlist_size + i - 1)
                local = F.log_softmax(cluster_out, dim=1).gather(1, relative.unsqueeze(1))
                output = output.index_copy(0, rows, local.squeeze(1))
            used += rows.numel()
        if used != n:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min().item()}, {target.max().item()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, gather.unsqueeze(1)).reshape(-1)
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        from ... import cat

        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(len(self.cutoffs) - 1):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, dim=1)

    def log_prob(self, input):
        """log p(class | input) for every class."""
        batched = input.dim() > 1
        input = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(input, self.head(input))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        """The most likely class."""
        from ... import argmax

        batched = input.dim() > 1
        input = input if batched else input.unsqueeze(0)
        head_output = self.head(input)
        output = argmax(head_output, dim=1)
        tail = output >= self.shortlist_size
        if not tail.any():
            return output if batched else output.squeeze(0)
        if tail.all():
            return argmax(self._get_full_log_prob(input, head_output), dim=1)
        log_prob = self._get_full_log_prob(input[tail], head_output[tail])
        output[tail] = argmax(log_prob, dim=1)
        return output if batched else output.squeeze(0)
