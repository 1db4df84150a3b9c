//! Randomized prior functions (Osband et al., NeurIPS 2018), as in the
//! "Randomized prior functions in PyTorch" post this project grew from:
//! an ensemble of MLPs, each trained on a bootstrap resample of the data
//! and added to a fixed random "prior" network, gives uncertainty bands
//! that widen away from the data.
//!
//! Run: `cargo run --release -p ferrotorch --example rpf [-- --out DIR]`.
//! Trains 50 members with MLP priors and 50 with a sin(3x) prior, shows a
//! progress bar, writes PNG plots (data, ensemble mean ± 2σ, members,
//! priors) to DIR (default `rpf-out`) and prints the wall time.

mod model;
mod plot;

use model::{train, Mlp, ModelWithPrior, SinPrior};
use plot::{Figure, Layer};
use plotters::style::RGBColor;

use ferrotorch as torch;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use torch::nn::{Forward, Module};
use torch::utils::data::{DataLoader, DataLoaderOptions, RandomSampler, TensorDataset};
use torch::{Result, Tensor};

/// One ensemble member before training: its model and bootstrap sample.
struct Member {
    model: ModelWithPrior,
    x: Tensor,
    y: Tensor,
}

/// A bootstrap resample: RandomSampler with replacement and one full batch.
fn bootstrap(data: &Arc<TensorDataset>) -> Result<(Tensor, Tensor)> {
    let n = data.tensors()[0].shape()[0];
    let sampler = RandomSampler::new(n, true, Some(n), None)?;
    let opts = DataLoaderOptions {
        batch_size: n,
        ..Default::default()
    };
    let mut loader = DataLoader::new(data.clone(), opts, Some(Box::new(sampler)))?;
    let batch = loader.iter()?.next().expect("one full batch")?;
    Ok((batch[0].clone(), batch[1].clone()))
}

struct Progress {
    done: AtomicUsize,
    total: usize,
}

impl Progress {
    fn tick(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let width = 40;
        let filled = done * width / self.total;
        eprint!(
            "\r[{}{}] {done}/{} members",
            "#".repeat(filled),
            ".".repeat(width - filled),
            self.total
        );
        if done == self.total {
            eprintln!();
        }
    }
}

/// Train every member, spread over `threads` threads.
fn train_all(members: &[Member], epochs: usize, threads: usize, progress: &Progress) -> Result<()> {
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| -> Result<()> {
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(m) = members.get(k) else {
                            return Ok(());
                        };
                        train(&m.model, &m.x, &m.y, epochs)?;
                        progress.tick();
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().expect("training thread panicked"))
    })
}

struct Args {
    out: std::path::PathBuf,
    members: usize,
    epochs: usize,
    threads: usize,
}

fn args() -> Args {
    let mut a = Args {
        out: "rpf-out".into(),
        members: 50,
        epochs: 100,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.chunks(2) {
        let value = pair.get(1).cloned().unwrap_or_default();
        match pair[0].as_str() {
            "--out" => a.out = value.into(),
            "--members" => a.members = value.parse().unwrap_or(a.members),
            "--epochs" => a.epochs = value.parse().unwrap_or(a.epochs),
            "--threads" => a.threads = value.parse().unwrap_or(a.threads).max(1),
            other => eprintln!("ignoring unknown argument {other}"),
        }
    }
    a
}

const DATA: RGBColor = RGBColor(220, 40, 40);
const BAND: RGBColor = RGBColor(90, 140, 230);
const MEAN: RGBColor = RGBColor(20, 60, 200);
const MEMBER: RGBColor = RGBColor(60, 60, 60);
const PRIOR: RGBColor = RGBColor(30, 140, 60);

fn column(t: &Tensor) -> Result<Vec<f64>> {
    t.reshape(&[-1])?.to_vec_f64()
}

fn main() -> Result<()> {
    let start = Instant::now();
    let a = args();
    std::fs::create_dir_all(&a.out)?;
    torch::set_num_threads(1); // the members run in parallel instead
    torch::manual_seed(0);
    // The workload's data: sin(3x) plus noise on [-1, 1].
    let x = torch::linspace(-1.0, 1.0, 100, ())?.unsqueeze(1)?;
    let y = x
        .mul(3.0)?
        .sin()?
        .add(&torch::randn(x.shape(), ())?.mul(0.1)?)?;
    let data = Arc::new(TensorDataset::new(vec![x.clone(), y.clone()])?);
    let x_test = torch::linspace(-2.0, 2.0, 200, ())?.unsqueeze(1)?;
    let (xs, ys, xt) = (column(&x)?, column(&y)?, column(&x_test)?);

    let data_points = |label| Layer::Points {
        label,
        xs: &xs,
        ys: &ys,
        color: DATA,
    };
    let mut index = Vec::new();
    let mut save = |file: String, fig: Figure, sentence: &str| -> Result<()> {
        fig.save(&a.out.join(&file))?;
        index.push((file, fig.title.to_string(), sentence.to_string()));
        Ok(())
    };
    save(
        "rpf_data.png".into(),
        Figure {
            title: "Training data: y = sin(3x) + noise",
            x_label: "x",
            y_label: "y",
            x: (-2.0, 2.0),
            y: (-2.0, 2.0),
            layers: vec![data_points("data (100 points)")],
        },
        "The 100 noisy samples every member is trained on (each on its own bootstrap \
         resample); there is no data outside [-1, 1].",
    )?;

    let progress = Progress {
        done: AtomicUsize::new(0),
        total: 2 * a.members,
    };
    let mut train_secs = 0.0;
    for kind in ["mlp_prior", "sin_prior"] {
        // Models and bootstrap samples are drawn in order on this thread,
        // so the run is the same whatever the number of threads.
        let members = (0..a.members)
            .map(|_| -> Result<Member> {
                let prior: Box<dyn Forward> = match kind {
                    "mlp_prior" => Box::new(Mlp::new()?),
                    _ => Box::new(SinPrior),
                };
                let model = ModelWithPrior {
                    base_model: Mlp::new()?,
                    prior_model: prior,
                    prior_scale: 1.0,
                };
                let (x, y) = bootstrap(&data)?;
                Ok(Member { model, x, y })
            })
            .collect::<Result<Vec<_>>>()?;
        let t = Instant::now();
        train_all(&members, a.epochs, a.threads, &progress)?;
        train_secs += t.elapsed().as_secs_f64();

        let _g = torch::no_grad();
        let mut preds = Vec::new();
        let mut priors = Vec::new();
        for m in &members {
            m.model.eval();
            preds.push(m.model.call(&x_test)?.reshape(&[1, -1])?);
            priors.push(m.model.prior_model.call(&x_test)?.reshape(&[1, -1])?);
        }
        let preds = torch::cat(&preds, 0)?;
        let mean = column(&preds.mean_dim(Some(&[0]), false, None)?)?;
        let std = column(&preds.std(Some(&[0]), Some(1.0), false)?)?;
        let lo: Vec<f64> = mean.iter().zip(&std).map(|(m, s)| m - 2.0 * s).collect();
        let hi: Vec<f64> = mean.iter().zip(&std).map(|(m, s)| m + 2.0 * s).collect();

        let (name, prior_lines) = match kind {
            "mlp_prior" => ("MLP priors", "prior (random MLP)"),
            _ => ("a sin(3x) prior", "prior: sin(3x)"),
        };
        let member_lines = (0..members.len())
            .map(|k| column(&preds.select(0, k as i64)?))
            .collect::<Result<Vec<_>>>()?;
        let prior_values = priors.iter().map(column).collect::<Result<Vec<_>>>()?;
        let view = |title: &'static str, layers| Figure {
            title,
            x_label: "x",
            y_label: "prediction",
            x: (-2.0, 2.0),
            y: (-3.0, 3.0),
            layers,
        };
        let (ensemble_title, members_title, priors_title) = match kind {
            "mlp_prior" => (
                "Ensemble with MLP priors: mean ± 2σ",
                "Ensemble with MLP priors: the members",
                "The MLP priors (fixed, never trained)",
            ),
            _ => (
                "Ensemble with a sin(3x) prior: mean ± 2σ",
                "Ensemble with a sin(3x) prior: the members",
                "The sin(3x) prior (fixed, never trained)",
            ),
        };
        save(
            format!("rpf_{kind}_ensemble.png"),
            view(
                ensemble_title,
                vec![
                    Layer::Band {
                        label: "ensemble mean ± 2σ",
                        xs: &xt,
                        lo: &lo,
                        hi: &hi,
                        color: BAND,
                    },
                    Layer::Lines {
                        label: "ensemble mean",
                        xs: &xt,
                        ys: vec![mean.clone()],
                        color: MEAN,
                        opacity: 1.0,
                        width: 2,
                    },
                    data_points("data"),
                ],
            ),
            &format!(
                "The mean of the {} members with {name} and a band of two standard \
                 deviations: narrow where there is data, wider away from it.",
                members.len()
            ),
        )?;
        save(
            format!("rpf_{kind}_members.png"),
            view(
                members_title,
                vec![
                    Layer::Lines {
                        label: "one member (base net + prior)",
                        xs: &xt,
                        ys: member_lines,
                        color: MEMBER,
                        opacity: 0.35,
                        width: 1,
                    },
                    data_points("data"),
                ],
            ),
            "Each trained member's prediction: they agree on the data and \
             spread out beyond it, which is where the uncertainty comes from.",
        )?;
        save(
            format!("rpf_{kind}_priors.png"),
            view(
                priors_title,
                vec![Layer::Lines {
                    label: prior_lines,
                    xs: &xt,
                    ys: prior_values,
                    color: PRIOR,
                    opacity: 0.4,
                    width: 1,
                }],
            ),
            "The fixed prior functions added to the members' outputs; the trained \
             base nets learn to correct them on the data only.",
        )?;
        let inside = mean[50..150].iter().zip(&std[50..150]);
        let band: f64 = inside.map(|(_, s)| 2.0 * s).sum::<f64>() / 100.0;
        println!(
            "{kind}: {} members trained; mean ±2σ band half-width {band:.3} on [-1, 1], {:.3} at x = ±2",
            members.len(),
            (2.0 * std[0] + 2.0 * std[199]) / 2.0
        );
    }
    plot::write_index(&a.out, &index)?;
    println!(
        "plots written to {} (open index.html); training {:.3} s, wall time {:.3} s",
        a.out.display(),
        train_secs,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::model::*;
    use ferrotorch as torch;
    use torch::nn::{functional as F, Forward, Module};
    use torch::Result;

    #[test]
    fn training_fits_the_data_and_leaves_the_prior_alone() -> Result<()> {
        torch::manual_seed(1);
        let x = torch::linspace(-1.0, 1.0, 50, ())?.unsqueeze(1)?;
        let y = x.mul(3.0)?.sin()?;
        let model = ModelWithPrior {
            base_model: Mlp::new()?,
            prior_model: Box::new(Mlp::new()?),
            prior_scale: 1.0,
        };
        let prior_before = model.prior_model.call(&x)?.to_vec::<f32>()?;
        let mse = |m: &ModelWithPrior| -> Result<f64> {
            F::mse_loss(&m.call(&x)?, &y, F::Reduction::Mean)?.item_f64()
        };
        let before = mse(&model)?;
        train(&model, &x, &y, 300)?;
        let after = mse(&model)?;
        assert!(
            after < 0.02 && after < before / 20.0,
            "mse {before} -> {after}"
        );
        assert_eq!(model.prior_model.call(&x)?.to_vec::<f32>()?, prior_before);
        // The prior's parameters are registered but never get gradients.
        assert_eq!(model.parameters().len(), 12);
        assert!(model
            .prior_model
            .parameters()
            .iter()
            .all(|p| p.grad().is_none()));
        Ok(())
    }
}
