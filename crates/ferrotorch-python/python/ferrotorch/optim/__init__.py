"""``ferrotorch.optim``: torch's optimizers and learning-rate schedulers."""

from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW
from .rmsprop import Adagrad, RMSprop
from .adadelta import Adadelta
from .adamax import Adamax
from .nadam import NAdam
from .radam import RAdam
from .asgd import ASGD
from .rprop import Rprop
from .lbfgs import LBFGS
from .sparse_adam import SparseAdam
from ._adafactor import Adafactor
from ._muon import Muon
from . import lr_scheduler, swa_utils  # noqa: F401

__all__ = ["ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "Adamax", "AdamW", "LBFGS", "Muon",
           "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam", "lr_scheduler",
           "swa_utils"]
from ._stateless import swap_in_optimizer_params_and_state  # noqa: E402,F401
