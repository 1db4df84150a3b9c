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
from .volumetric import (AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, Conv3d, ConvTranspose1d,
                         ConvTranspose3d, CTCLoss, FractionalMaxPool2d, FractionalMaxPool3d,
                         EmbeddingBag, MaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d)
from .extra import (  # noqa: F401
    AdaptiveAvgPool1d, AdaptiveMaxPool1d, AvgPool1d, BatchNorm3d, ChannelShuffle, CircularPad1d,
    CircularPad2d, ConstantPad1d, ConstantPad2d, ConstantPad3d, CosineEmbeddingLoss, CosineSimilarity,
    Dropout3d, Fold, GaussianNLLLoss, Hardshrink, HingeEmbeddingLoss, InstanceNorm1d, InstanceNorm2d,
    InstanceNorm3d, LocalResponseNorm, MarginRankingLoss, MultiLabelMarginLoss, MultiLabelSoftMarginLoss,
    MultiMarginLoss, PairwiseDistance, PixelShuffle, PixelUnshuffle, PoissonNLLLoss, ReflectionPad1d,
    ReflectionPad2d, ReplicationPad1d, ReplicationPad2d, RReLU, Softmax2d, SoftMarginLoss, Softshrink,
    Tanhshrink, TripletMarginLoss, TripletMarginWithDistanceLoss, Unfold, Upsample, UpsamplingBilinear2d,
    UpsamplingNearest2d, ZeroPad1d, ZeroPad2d)
from .extra import CircularPad3d, ReflectionPad3d, ReplicationPad3d, ZeroPad3d  # noqa: F401,E402
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d,  # noqa: F401,E402
                   LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d,
                   LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear, LazyModuleMixin)
from .container import Container, ParameterDict, ParameterList  # noqa: F401,E402
from .loss import NLLLoss2d  # noqa: F401,E402
from .lppool import LPPool1d, LPPool2d, LPPool3d  # noqa: F401,E402
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401,E402
from .linear_cross_entropy import LinearCrossEntropyLoss, LinearCrossEntropyOptions  # noqa: F401,E402
from .batchnorm import SyncBatchNorm  # noqa: F401,E402
from .extra import CrossMapLRN2d  # noqa: F401,E402
