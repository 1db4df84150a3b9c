//! A tour of ferrotorch's tensor core: creation, views that share storage,
//! broadcasting and type promotion, reductions, matmul, and calling an op by
//! name through the dispatcher. Run it with
//! `cargo run --release -p ferrotorch --example tour`.

use ferrotorch as torch;
use torch::dispatch::{call, IValue};
use torch::DType;

fn main() -> torch::Result<()> {
    torch::manual_seed(0);

    println!("== creation");
    let a = torch::arange(0, 12, 1, DType::F32)?.reshape(&[3, 4])?;
    println!("a = {a}");
    println!(
        "torch::rand(&[2, 3]) after manual_seed(0) (same numbers as PyTorch):\n{}",
        torch::rand(&[2, 3], ())?
    );

    println!("\n== views share storage");
    let t = a.t()?;
    let row = a.select(0, 1)?;
    let every_other = a.slice(1, None, None, 2)?;
    println!(
        "a.t() strides {:?}, same data_ptr: {}",
        t.stride(),
        t.data_ptr() == a.data_ptr()
    );
    println!("a[1] = {row}\na[:, ::2] = {every_other}");
    every_other.mul_(10)?;
    println!("after a[:, ::2] *= 10, a = {a}");
    println!("storage version counter: {}", a.version());

    println!("\n== broadcasting and type promotion");
    let ints = torch::tensor([1, 2, 3])?;
    let col = torch::tensor([[0.5], [1.5]])?;
    println!("int64 + 2.5 -> {}", ints.add(2.5)?);
    println!("[3] + [2, 1] ->\n{}", ints.add(&col)?);
    println!("int64 / int64 -> {}", ints.div(&ints.add(1)?)?);

    println!("\n== reductions and matmul");
    let x = torch::randn(&[4, 5], ())?;
    println!("x.sum(dim=1) = {}", x.sum_dim(Some(&[1]), false, None)?);
    let (vals, idx) = x.max_dim(0, false)?;
    println!("x.max(dim=0) = {vals}, indices {idx}");
    println!("x @ x.T =\n{}", x.matmul(&x.t()?)?);

    println!("\n== the dispatcher: ops by name with boxed values");
    let r = call(
        "add",
        &[ints.clone().into(), ints.clone().into()],
        &[("alpha", IValue::Int(10))],
    )?;
    println!(
        "call(\"add\", [ints, ints], alpha=10) = {}",
        r.into_tensor()?
    );
    println!("{} ops registered", torch::dispatch::op_names().len());

    println!("\n== errors are values, not panics");
    match a.matmul(&a) {
        Ok(_) => unreachable!(),
        Err(e) => println!("a.matmul(a): {e}"),
    }
    match a.view(&[5, -1]) {
        Ok(_) => unreachable!(),
        Err(e) => println!("a.view([5, -1]): {e}"),
    }
    Ok(())
}
