//! The default generator reproduces PyTorch's CPU streams
//! (Note [PyTorch-compatible random streams]); the expected values were
//! printed by `fixtures/gen_random.py` with PyTorch 2.15.

use ferrotorch_core::native::random::{manual_seed, Generator};
use ferrotorch_core::{DType, Tensor};

fn close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= tol, "{got:?} vs {want:?}");
    }
}

#[test]
fn rand_matches_torch_bit_for_bit() {
    let _l = crate::rng_lock();
    manual_seed(0);
    let r = Tensor::rand(&[5], DType::F32)
        .unwrap()
        .to_vec_f64()
        .unwrap();
    close(
        &r,
        &[
            0.49625658988952637,
            0.7682217955589294,
            0.08847743272781372,
            0.13203048706054688,
            0.30742281675338745,
        ],
        0.0,
    );
    manual_seed(0);
    let r = Tensor::rand(&[3], DType::F64)
        .unwrap()
        .to_vec_f64()
        .unwrap();
    close(
        &r,
        &[0.9700530018065531, 0.707819864399788, 0.45938294312745087],
        0.0,
    );
}

#[test]
fn randn_randint_randperm_match_torch() {
    let _l = crate::rng_lock();
    manual_seed(0);
    let r = Tensor::randn(&[5], DType::F32)
        .unwrap()
        .to_vec_f64()
        .unwrap();
    close(
        &r,
        &[
            1.5409960746765137,
            -0.293428897857666,
            -2.1787893772125244,
            0.5684312582015991,
            -1.0845223665237427,
        ],
        1e-6,
    );
    manual_seed(0);
    let a = Tensor::randn(&[20], DType::F32)
        .unwrap()
        .to_vec_f64()
        .unwrap();
    let b = Tensor::randn(&[20], DType::F32)
        .unwrap()
        .to_vec_f64()
        .unwrap();
    close(
        &a[..4],
        &[
            -1.1258398294448853,
            -1.152360200881958,
            -0.2505785822868347,
            -0.4338788092136383,
        ],
        1e-6,
    );
    close(
        &b[17..],
        &[
            -0.19383712112903595,
            0.44551217555999756,
            1.3252748250961304,
        ],
        1e-6,
    );
    manual_seed(0);
    let r = Tensor::randint(0, 10, &[8], ())
        .unwrap()
        .to_vec::<i64>()
        .unwrap();
    assert_eq!(r, vec![4, 9, 3, 0, 3, 9, 7, 3]);
    manual_seed(0);
    let r = Tensor::randperm(8, None).unwrap().to_vec::<i64>().unwrap();
    assert_eq!(r, vec![4, 0, 7, 3, 2, 5, 1, 6]);
}

#[test]
fn bernoulli_draws_torchs_float_and_double_streams() {
    // torch 2.15: g = torch.Generator().manual_seed(3);
    // torch.bernoulli(torch.full((8,), 0.5, dtype=...), generator=g)
    let g = Generator::new(3);
    let p = Tensor::full(&[8], 0.5, DType::F32).unwrap();
    let b = p.bernoulli(Some(&g)).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(b, vec![1., 1., 1., 1., 1., 1., 0., 0.]);
    let g = Generator::new(3);
    let p = Tensor::full(&[8], 0.5, DType::F64).unwrap();
    let b = p.bernoulli(Some(&g)).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(b, vec![1., 1., 0., 1., 0., 0., 1., 1.]);
}

#[test]
fn distributions_have_the_right_moments() {
    let g = Generator::new(123);
    let x = Tensor::randn_with(&[200_000], DType::F64, Some(&g)).unwrap();
    let v = x.to_vec::<f64>().unwrap();
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|a| (a - mean) * (a - mean)).sum::<f64>() / v.len() as f64;
    assert!(
        mean.abs() < 0.01 && (var - 1.0).abs() < 0.01,
        "{mean} {var}"
    );
    let p = Tensor::full(&[100_000], 0.3, DType::F32).unwrap();
    let b = p.bernoulli(Some(&g)).unwrap().to_vec_f64().unwrap();
    let frac = b.iter().sum::<f64>() / b.len() as f64;
    assert!((frac - 0.3).abs() < 0.01, "{frac}");
    let w = Tensor::from_slice(&[0.0f32, 1.0, 3.0]);
    let s = w
        .multinomial(40_000, true, Some(&g))
        .unwrap()
        .to_vec::<i64>()
        .unwrap();
    let c2 = s.iter().filter(|&&i| i == 2).count() as f64 / s.len() as f64;
    assert!(!s.contains(&0) && (c2 - 0.75).abs() < 0.01, "{c2}");
    let perm = w.multinomial(3, false, Some(&g));
    assert!(
        perm.is_err(),
        "zero-weight category cannot be drawn without replacement 3 times"
    );
    assert!(Tensor::randint(5, 5, &[2], ()).is_err());
    assert!(Tensor::rand(&[2], DType::I64).is_err());
}
