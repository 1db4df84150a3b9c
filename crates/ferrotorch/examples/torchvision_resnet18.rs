//! A torchvision ResNet-18 checkpoint (`torch.save(resnet18().state_dict(),
//! f)` in PyTorch) loaded into `models::resnet18` and run in eval mode:
//!
//! ```text
//! cargo run --release -p ferrotorch --example torchvision_resnet18 -- resnet18.pt [io.pt]
//! ```
//!
//! With `io.pt` (a `torch.save({"x": input, "y": torchvision's output})`),
//! prints the largest difference from torchvision's output and exits with
//! status 1 past 1e-4; without it, the top-5 classes of a tensor of ones.

use ferrotorch as torch;
use torch::nn::{Forward, Module};
use torch::serialization::{load_pt, pickle::Obj};
use torch::{Tensor, TensorOptions};

fn main() -> torch::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let weights = args.get(1).map(String::as_str).unwrap_or("resnet18.pt");
    let bytes = std::fs::read(weights).map_err(|e| {
        torch::Error::new(
            torch::ErrorKind::Runtime,
            format!("cannot read {weights}: {e}"),
        )
    })?;
    let sd = torch::serialization::load_state_dict_pt(&bytes)?;
    let model = torch::models::resnet18(1000)?;
    let report = model.load_state_dict(&sd, true)?;
    assert!(report.missing_keys.is_empty() && report.unexpected_keys.is_empty());
    model.eval();
    let _g = torch::autograd::no_grad();
    let Some(io) = args.get(2) else {
        let y = model.forward(&Tensor::ones(&[1, 3, 224, 224], TensorOptions::default())?)?;
        let (vals, idx) = y.flatten(0, -1)?.topk(5, 0, true, true)?;
        for (v, i) in vals.to_vec::<f32>()?.iter().zip(idx.to_vec::<i64>()?) {
            println!("class {i:4}  {v:.4}");
        }
        return Ok(());
    };
    let ck = load_pt(
        &std::fs::read(io).map_err(|e| {
            torch::Error::new(torch::ErrorKind::Runtime, format!("cannot read {io}: {e}"))
        })?,
        &[],
    )?;
    let Obj::Dict(items) = ck.doc.get(ck.doc.root) else {
        return Err(torch::Error::new(
            torch::ErrorKind::Runtime,
            "io.pt is not a dict",
        ));
    };
    let get = |key: &str| -> Option<Tensor> {
        items
            .iter()
            .find(|(k, _)| matches!(ck.doc.get(*k), Obj::Str(s) if s == key))
            .and_then(|(_, v)| ck.tensor(*v).cloned())
    };
    let (x, want) = (
        get("x").expect("io.pt has x"),
        get("y").expect("io.pt has y"),
    );
    let got = model.forward(&x)?;
    let diff = got.sub(&want)?.abs()?.max()?.item()?.to_f64();
    println!("max |ferrotorch - torchvision| = {diff:.3e}");
    if diff > 1e-4 {
        std::process::exit(1);
    }
    Ok(())
}
