//! `nn.Dropout` and its variants: active in training mode only.

use crate::functional as F;
use crate::{Forward, Module, ModuleState};
use ferrotorch_core::{ensure, Result, Tensor};

macro_rules! dropout_module {
    ($($(#[$doc:meta])* $name:ident => $f:path;)*) => {$(
        $(#[$doc])*
        #[derive(Module)]
        #[module(crate = "crate", extra_repr = "describe")]
        pub struct $name {
            /// Probability of an element (or channel) being zeroed.
            pub p: f64,
            state: ModuleState,
        }

        impl $name {
            /// The module with drop probability `p` (PyTorch's default is 0.5).
            pub fn new(p: f64) -> Result<$name> {
                ensure!(
                    (0.0..=1.0).contains(&p),
                    Value,
                    "dropout probability has to be between 0 and 1, but got {p}"
                );
                Ok($name { p, state: ModuleState::new() })
            }

            fn describe(&self) -> String {
                format!("p={:?}, inplace=False", self.p)
            }
        }

        impl Forward for $name {
            fn forward(&self, input: &Tensor) -> Result<Tensor> {
                $f(input, self.p, self.state.is_training())
            }
        }
    )*};
}

dropout_module! {
    /// `nn.Dropout(p=0.5)`.
    Dropout => F::dropout;
    /// `nn.Dropout1d(p=0.5)`: whole channels of `(N, C, L)` inputs.
    Dropout1d => F::dropout1d;
    /// `nn.Dropout2d(p=0.5)`: whole channels of `(N, C, H, W)` inputs.
    Dropout2d => F::dropout2d;
    /// `nn.AlphaDropout(p=0.5)`: for SELU networks.
    AlphaDropout => F::alpha_dropout;
    /// `nn.FeatureAlphaDropout(p=0.5)`.
    FeatureAlphaDropout => F::feature_alpha_dropout;
}
