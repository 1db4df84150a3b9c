//! Traced models run bit for bit like eager (issue 19, part 4): the
//! `models` ViT and a member of the randomized-prior-functions ensemble
//! (seeds/000, the main example's model), traced, saved, loaded and run;
//! the member's gradients through the traced graph equal eager's.

#![allow(clippy::cloned_ref_to_slice_refs)]

#[path = "../examples/rpf/model.rs"]
#[allow(dead_code)]
mod model;

use ferrotorch as torch;
use model::{Mlp, ModelWithPrior, SinPrior};
use torch::nn::{self, Forward, Module};
use torch::{jit, DType, Result, Tensor};

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|x| x.to_bits())
        .collect()
}

#[test]
fn traced_vit_matches_eager_bit_for_bit() -> Result<()> {
    torch::manual_seed(41);
    let vit = nn::models::vision_transformer(nn::models::VitConfig {
        image_size: 16,
        patch_size: 4,
        num_layers: 2,
        num_heads: 2,
        hidden_dim: 16,
        mlp_dim: 32,
        num_classes: 5,
    })?;
    vit.eval();
    let x = Tensor::randn(&[2, 3, 16, 16], DType::F32)?;
    let m = jit::trace_module(&vit, &[x.clone()], |v, t| Ok(vec![v.forward(&t[0])?]))?;
    assert!(m.trace_warnings().is_empty(), "{:?}", m.trace_warnings());
    // the encoder blocks are calls; the flat graph has the attention ops
    let text = m.graph().to_string();
    assert!(text.contains("prim::CallMethod"), "{text}");
    let flat = m.inlined_graph()?.to_string();
    assert!(
        flat.contains("aten::layer_norm") && flat.contains("aten::conv2d"),
        "{flat}"
    );
    let x2 = Tensor::randn(&[2, 3, 16, 16], DType::F32)?;
    let want = vit.forward(&x2)?;
    assert_eq!(bits(&m.forward(&[x2.clone()])?[0]), bits(&want));
    let loaded = jit::load_bytes(&m.save_to_bytes()?)?;
    assert_eq!(bits(&loaded.forward(&[x2.clone()])?[0]), bits(&want));
    Ok(())
}

#[test]
fn traced_prior_ensemble_member_matches_eager() -> Result<()> {
    torch::manual_seed(42);
    let member = ModelWithPrior {
        base_model: Mlp::new()?,
        prior_model: Box::new(SinPrior),
        prior_scale: 3.0,
    };
    let x = Tensor::linspace(-1.0, 1.0, 50, DType::F32)?.reshape(&[50, 1])?;
    let m = jit::trace_module(&member, &[x.clone()], |n, t| Ok(vec![n.forward(&t[0])?]))?;
    assert!(m.trace_warnings().is_empty(), "{:?}", m.trace_warnings());
    // the prior is recorded (sin, detach), not baked in as a constant
    let flat = m.inlined_graph()?.to_string();
    for op in ["aten::sin", "aten::detach", "aten::selu", "aten::linear"] {
        assert!(flat.contains(op), "{op} missing:\n{flat}");
    }
    let x2 = Tensor::linspace(-2.0, 2.0, 30, DType::F32)?.reshape(&[30, 1])?;
    let (got, want) = (m.forward(&[x2.clone()])?.remove(0), member.forward(&x2)?);
    assert_eq!(bits(&got), bits(&want));
    let ps: Vec<Tensor> = member.parameters().iter().map(|p| p.tensor()).collect();
    let g = |y: &Tensor| -> Result<Vec<Vec<u32>>> {
        Ok(
            torch::autograd::grad(&[y.pow(2.0)?.mean()?], &ps, None, None, false, false)?
                .iter()
                .map(|g| bits(g.as_ref().unwrap()))
                .collect(),
        )
    };
    assert_eq!(g(&got)?, g(&want)?);
    // saved and loaded: the same values
    let loaded = jit::load_bytes(&m.save_to_bytes()?)?;
    assert_eq!(bits(&loaded.forward(&[x2.clone()])?[0]), bits(&want));
    Ok(())
}
