"""The module classes of ``ferrotorch.nn``."""

from .module import Module
from .linear import Identity, Linear, Flatten, Unflatten
from .activation import (CELU, ELU, GELU, GLU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU,
                         LogSigmoid, LogSoftmax, Mish, PReLU, ReLU, ReLU6, SELU, SiLU, Sigmoid,
                         Softmax, Softmin, Softplus, Softsign, Tanh, Threshold)
from .container import ModuleDict, ModuleList, Sequential
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss,
                   MSELoss, NLLLoss, SmoothL1Loss)
from .misc import Dropout, Embedding, LayerNorm
from .conv import AdaptiveAvgPool2d, AvgPool2d, Conv1d, Conv2d, MaxPool2d
from .batchnorm import BatchNorm1d, BatchNorm2d, GroupNorm
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase
from .transformer import (MultiheadAttention, NonDynamicallyQuantizableLinear, TransformerEncoder, TransformerEncoderLayer)
from .conv import AdaptiveMaxPool2d, ConvTranspose2d, MaxPool1d
from .linear import Bilinear
from .misc import AlphaDropout, Dropout1d, Dropout2d, FeatureAlphaDropout, RMSNorm
from .transformer import Transformer, TransformerDecoder, TransformerDecoderLayer
from .volumetric import (AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, Conv3d, CTCLoss,
                         EmbeddingBag, MaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d)
