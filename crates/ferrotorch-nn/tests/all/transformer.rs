//! Attention and transformer layers against PyTorch
//! (fixtures/transformer.json, made by fixtures/gen_transformer.py): the
//! same initial weights under the same seed, outputs with attention and
//! key-padding masks, pre-/post-norm, batch_first, state_dict keys.

use crate::common::{assert_close, float32, load, rng_lock};
use ferrotorch_core::native::random::manual_seed;
use ferrotorch_core::{Result, Tensor};
use ferrotorch_nn::{self as nn, Forward, Module};

fn keys(m: &dyn Module) -> Vec<String> {
    m.state_dict().keys().cloned().collect()
}

fn expected_keys(v: &serde_json::Value) -> Vec<String> {
    serde_json::from_value(v.clone()).unwrap()
}

fn small(o: nn::TransformerOptions) -> nn::TransformerOptions {
    nn::TransformerOptions {
        dim_feedforward: 16,
        dropout: 0.0,
        ..o
    }
}

#[test]
fn multihead_attention_matches_pytorch() -> Result<()> {
    let _rng = rng_lock();
    let fx = load("transformer.json");
    let m = &fx["mha"];
    manual_seed(50);
    let mha = nn::MultiheadAttention::new(8, 2, 0.0, true, false)?;
    assert_close(
        "in_proj_weight",
        &mha.in_proj_weight.tensor(),
        &m["in_proj_weight"],
        1e-7,
        1e-6,
    );
    assert_close(
        "out_proj.weight",
        &mha.out_proj.weight.tensor(),
        &m["out_proj_weight"],
        1e-7,
        1e-6,
    );
    assert_eq!(keys(&mha), expected_keys(&m["keys"]));
    let (q, k, v) = (float32(&m["q"]), float32(&m["k"]), float32(&m["v"]));
    let attn_mask = Tensor::from_vec(
        vec![
            false, false, true, false, false, true, false, false, false, false, false, false,
        ],
        &[3, 4],
    )?;
    let kpm = Tensor::from_vec(
        vec![false, false, false, false, false, false, false, true],
        &[2, 4],
    )?;
    let (y, w) = mha.forward(&q, &k, &v, Some(&kpm), true, Some(&attn_mask), true)?;
    assert_close("mha output", &y, &m["y"], 1e-5, 1e-4);
    assert_close("mha weights", &w.unwrap(), &m["w"], 1e-6, 1e-4);
    let (_, wh) = mha.forward(&q, &k, &v, None, true, None, false)?;
    assert_close("per-head weights", &wh.unwrap(), &m["w_heads"], 1e-6, 1e-4);
    // Gradients reach every parameter.
    y.sum()?.backward()?;
    assert!(mha.parameters().iter().all(|p| p.grad().is_some()));
    let e = mha
        .forward(
            &q,
            &k,
            &v,
            None,
            true,
            Some(&Tensor::zeros(&[2, 2], ())?),
            true,
        )
        .unwrap_err();
    assert!(e.to_string().contains("attn_mask"));
    Ok(())
}

#[test]
fn encoder_and_decoder_layers_match_pytorch() -> Result<()> {
    let _rng = rng_lock();
    let fx = load("transformer.json");
    let src = float32(&fx["src"]);
    manual_seed(51);
    let layer = nn::TransformerEncoderLayer::new(8, 2, small(Default::default()))?;
    let pre_opts = nn::TransformerOptions {
        activation: "gelu",
        norm_first: true,
        batch_first: true,
        ..Default::default()
    };
    let pre = nn::TransformerEncoderLayer::new(8, 2, small(pre_opts))?;
    let causal = Tensor::ones(&[5, 5], ferrotorch_core::DType::Bool)?.triu(1)?;
    assert_close(
        "encoder layer",
        &layer.forward_masked(&src, Some(&causal), None)?,
        &fx["encoder_layer"]["y"],
        1e-5,
        1e-4,
    );
    assert_close(
        "pre-norm, batch_first",
        &pre.call(&src.transpose(0, 1)?)?,
        &fx["encoder_layer"]["pre_y"],
        1e-5,
        1e-4,
    );

    manual_seed(52);
    let enc = nn::TransformerEncoder::new(
        || nn::TransformerEncoderLayer::new(8, 2, small(Default::default())),
        2,
        Some(nn::LayerNorm::new(&[8], 1e-5, true, true)?),
    )?;
    assert_eq!(keys(&enc), expected_keys(&fx["encoder"]["keys"]));
    assert_close("encoder", &enc.call(&src)?, &fx["encoder"]["y"], 1e-5, 1e-4);

    manual_seed(53);
    let dec = nn::TransformerDecoderLayer::new(8, 2, small(Default::default()))?;
    assert_eq!(keys(&dec), expected_keys(&fx["decoder"]["keys"]));
    let tgt = float32(&fx["decoder"]["tgt"]);
    let tgt_mask = Tensor::ones(&[3, 3], ferrotorch_core::DType::Bool)?.triu(1)?;
    let y = dec.forward(&tgt, &src, Some(&tgt_mask), None, None, None)?;
    assert_close("decoder layer", &y, &fx["decoder"]["y"], 1e-5, 1e-4);
    Ok(())
}
