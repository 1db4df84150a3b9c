//! RNN, LSTM and GRU against PyTorch (fixtures/rnn.json, made by
//! fixtures/gen_rnn.py): under the same seed, the same weights, outputs,
//! final states and input gradients — multi-layer, bidirectional,
//! batch-first, unbatched — plus keys, reprs and errors.

use crate::common::{assert_close, float32, load, rng_lock};
use ferrotorch_core::native::random::manual_seed;
use ferrotorch_core::{Result, Tensor};
use ferrotorch_nn::{self as nn, Module};
use serde_json::Value;

fn check_meta(name: &str, m: &dyn Module, fx: &Value) {
    let keys: Vec<String> = m.state_dict().keys().cloned().collect();
    let expected: Vec<String> = serde_json::from_value(fx["keys"].clone()).unwrap();
    assert_eq!(keys, expected, "{name}");
    assert_eq!(m.repr(), fx["repr"].as_str().unwrap(), "{name}");
}

fn input(fx: &Value) -> Result<Tensor> {
    float32(&fx["x"]).requires_grad_(true)
}

#[test]
fn recurrent_layers_match_pytorch() -> Result<()> {
    let _rng = rng_lock();
    let all = load("rnn.json");
    let o = nn::RNNOptions::default();

    let fx = &all["rnn_relu_nobias"];
    manual_seed(60);
    let rnn = nn::RNN::new(
        4,
        5,
        nn::RNNOptions {
            nonlinearity: "relu",
            bias: false,
            ..o
        },
    )?;
    check_meta("rnn", &rnn, fx);
    let x = input(fx)?;
    let (y, h) = rnn.forward(&x, None)?;
    y.sum()?.add(&h.sum()?)?.backward()?;
    assert_close("rnn y", &y, &fx["y"], 1e-5, 1e-4);
    assert_close("rnn h", &h, &fx["h"], 1e-5, 1e-4);
    assert_close("rnn grad", &x.grad().unwrap(), &fx["grad"], 1e-5, 1e-4);

    let fx = &all["lstm_2layer_bi_batch_first"];
    manual_seed(61);
    let lstm = nn::LSTM::new(
        4,
        5,
        nn::RNNOptions {
            num_layers: 2,
            bidirectional: true,
            batch_first: true,
            ..o
        },
    )?;
    check_meta("lstm", &lstm, fx);
    let x = input(fx)?;
    let (y, (h, c)) = lstm.forward(&x, None)?;
    y.sum()?.add(&h.sum()?)?.add(&c.sum()?)?.backward()?;
    assert_close("lstm y", &y, &fx["y"], 1e-5, 1e-4);
    assert_close("lstm h", &h, &fx["h"], 1e-5, 1e-4);
    assert_close("lstm c", &c, &fx["c"], 1e-5, 1e-4);
    assert_close("lstm grad", &x.grad().unwrap(), &fx["grad"], 1e-5, 1e-4);

    let fx = &all["gru_2layer"];
    manual_seed(62);
    let gru = nn::GRU::new(4, 5, nn::RNNOptions { num_layers: 2, ..o })?;
    check_meta("gru", &gru, fx);
    let x = input(fx)?;
    let (y, h) = gru.forward(&x, None)?;
    y.sum()?.add(&h.sum()?)?.backward()?;
    assert_close("gru y", &y, &fx["y"], 1e-5, 1e-4);
    assert_close("gru h", &h, &fx["h"], 1e-5, 1e-4);
    assert_close("gru grad", &x.grad().unwrap(), &fx["grad"], 1e-5, 1e-4);

    let fx = &all["lstm_unbatched"];
    manual_seed(63);
    let lstm = nn::LSTM::new(4, 3, o)?;
    let x = input(fx)?;
    let (y, (h, c)) = lstm.forward(&x, None)?;
    y.sum()?.add(&h.sum()?)?.add(&c.sum()?)?.backward()?;
    assert_close("unbatched y", &y, &fx["y"], 1e-5, 1e-4);
    assert_close("unbatched h", &h, &fx["h"], 1e-5, 1e-4);
    assert_close(
        "unbatched grad",
        &x.grad().unwrap(),
        &fx["grad"],
        1e-5,
        1e-4,
    );
    Ok(())
}

#[test]
fn recurrent_errors() -> Result<()> {
    let _rng = rng_lock();
    let o = nn::RNNOptions::default();
    let gru = nn::GRU::new(4, 5, o)?;
    let e = gru
        .forward(&Tensor::zeros(&[6, 3, 2], ())?, None)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "input.size(-1) must be equal to input_size. Expected 4, got 2"
    );
    let e = gru
        .forward(
            &Tensor::zeros(&[6, 3, 4], ())?,
            Some(&Tensor::zeros(&[1, 2, 5], ())?),
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Expected hidden size (1, 3, 5), got [1, 2, 5]"
    );
    let e = nn::RNN::new(
        4,
        5,
        nn::RNNOptions {
            nonlinearity: "gelu",
            ..o
        },
    )
    .err()
    .unwrap();
    assert_eq!(
        e.to_string(),
        "Unknown nonlinearity 'gelu'. Select from 'tanh' or 'relu'."
    );
    // Dropout between layers only acts in training mode.
    let lstm = nn::LSTM::new(
        4,
        5,
        nn::RNNOptions {
            num_layers: 2,
            dropout: 0.5,
            ..o
        },
    )?;
    let x = Tensor::randn(&[6, 3, 4], ())?;
    lstm.eval();
    let a = lstm.forward(&x, None)?.0.to_vec::<f32>()?;
    assert_eq!(a, lstm.forward(&x, None)?.0.to_vec::<f32>()?);
    Ok(())
}
