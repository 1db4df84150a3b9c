"""``ferrotorch.optim``: optimizers and learning-rate schedulers."""

from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW
from .rmsprop import Adagrad, RMSprop
from . import lr_scheduler  # noqa: F401
