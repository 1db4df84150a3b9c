//! Load a saved program and run it on a tensor of ones: the Rust third of
//! the seeds/000 demo (`examples/node/resnet.js` is the Node one,
//! `examples/node/resnet18.py` traces and saves the model).
//!
//! ```text
//! cargo run --release -p ferrotorch --example run_program -- resnet18_trace.pt 1,3,224,224 [--json]
//! ```
//!
//! Prints the top-5 classes (index and score); with `--json`, a JSON
//! object with them and the output's float32 bytes in hex, for the test
//! that checks Python, Rust and Node give the same bits; with `--time N`,
//! the median of N timed forwards in microseconds (`bench/node.js` runs it
//! beside Node's).

use ferrotorch::{jit, Tensor, TensorOptions};

fn main() -> ferrotorch::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .map(String::as_str)
        .unwrap_or("resnet18_trace.pt");
    let shape: Vec<usize> = args
        .get(2)
        .map(String::as_str)
        .unwrap_or("1,3,224,224")
        .split(',')
        .map(|s| s.parse().expect("a shape like 1,3,224,224"))
        .collect();
    let json = args.iter().any(|a| a == "--json");
    let time: Option<usize> = args
        .iter()
        .position(|a| a == "--time")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse().expect("--time N"));
    let module = jit::load(path)?;
    let x = Tensor::ones(&shape, TensorOptions::default())?;
    if let Some(n) = time {
        let _g = ferrotorch::autograd::no_grad();
        for _ in 0..3 {
            module.forward(std::slice::from_ref(&x))?;
        }
        let mut us: Vec<f64> = (0..n)
            .map(|_| {
                let t = std::time::Instant::now();
                module
                    .forward(std::slice::from_ref(&x))
                    .map(|_| t.elapsed().as_secs_f64() * 1e6)
            })
            .collect::<ferrotorch::Result<_>>()?;
        us.sort_by(f64::total_cmp);
        println!("{{\"median_us\": {:.1}}}", us[us.len() / 2]);
        return Ok(());
    }
    let out = ferrotorch::autograd::with_no_grad(|| module.forward(&[x]))?;
    let y = out[0].flatten(0, -1)?;
    let (vals, idx) = y.topk(5, -1, true, true)?;
    let idx = idx.to_vec::<i64>()?;
    let vals = vals.to_vec::<f32>()?;
    if json {
        let hex: String = y
            .to_vec::<f32>()?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .map(|b| format!("{b:02x}"))
            .collect();
        println!("{{\"top5\": {idx:?}, \"bytes\": \"{hex}\"}}");
    } else {
        for (i, v) in idx.iter().zip(vals) {
            println!("class {i:4}  score {v:.4}");
        }
    }
    Ok(())
}
