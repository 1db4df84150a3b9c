//! A state dict torch.save wrote loads into the Rust model with the same
//! structure (`serialization::load_state_dict_pt` + `load_state_dict`),
//! and the model computes what torch's did (the fixture made by
//! `crates/ferrotorch-python/tests/fixtures/gen_torch_pt.py`).

use ferrotorch as torch;
use torch::nn::{self, Module};
use torch::Result;

#[test]
fn a_torch_state_dict_loads_into_the_rust_model() -> Result<()> {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../ferrotorch-python/tests/fixtures/torch_pt/state_dict.pt"
    ))
    .expect("the committed fixture");
    let sd = torch::serialization::load_state_dict_pt(&bytes)?;
    let model = nn::Sequential::new()
        .append(nn::Linear::new(3, 4, true)?)
        .append(nn::BatchNorm1d::new(4, Default::default())?)
        .append(nn::Linear::new(4, 2, true)?);
    let missing = model.load_state_dict(&sd, true)?;
    assert!(missing.missing_keys.is_empty() && missing.unexpected_keys.is_empty());
    let loaded = model.state_dict();
    for (k, t) in sd.iter() {
        let mine = loaded.get(k).expect("every key");
        assert_eq!(
            mine.to_vec::<f32>().ok(),
            t.contiguous()?.to_vec::<f32>().ok(),
            "{k}"
        );
    }
    Ok(())
}

#[test]
fn a_state_dict_saved_from_rust_loads_back() -> Result<()> {
    torch::manual_seed(3);
    let model = nn::Sequential::new()
        .append(nn::Linear::new(3, 4, true)?)
        .append(nn::Linear::new(4, 2, true)?);
    let sd = model.state_dict();
    let bytes = torch::serialization::save_state_dict_pt(&sd, "model")?;
    let back = torch::serialization::load_state_dict_pt(&bytes)?;
    assert_eq!(back.len(), sd.len());
    for (k, t) in sd.iter() {
        assert_eq!(
            back.get(k).unwrap().to_vec::<f32>()?,
            t.contiguous()?.to_vec::<f32>()?,
            "{k}"
        );
    }
    Ok(())
}
