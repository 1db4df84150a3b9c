//! The tensor core through its Rust API: views alias storage, the version
//! counter, indexing, creation and dtype inference, copies across dtypes,
//! threads, and the error cases the issue lists. Expected values are
//! analytic (arange data) or PyTorch's documented behaviour.

use ferrotorch_core::tensor::{step, TensorIndex, ELLIPSIS, NEW_AXIS};
use ferrotorch_core::{tensor, DType, ErrorKind, Tensor};

fn ar(n: i64) -> Tensor {
    Tensor::arange(0, n, 1, ()).unwrap()
}

fn v(t: &Tensor) -> Vec<i64> {
    t.to_vec_i64().unwrap()
}

#[test]
fn views_share_storage_and_never_copy() {
    let a = ar(24).reshape(&[2, 3, 4]).unwrap();
    let p = a.data_ptr();
    let es = a.element_size();
    let views = [
        a.view(&[6, 4]).unwrap(),
        a.reshape(&[4, 6]).unwrap(),
        a.transpose(0, 2).unwrap(),
        a.permute(&[2, 0, 1]).unwrap(),
        a.movedim(&[0], &[2]).unwrap(),
        a.unsqueeze(1).unwrap(),
        a.flatten(0, 1).unwrap(),
        a.unflatten(2, &[2, 2]).unwrap(),
        a.expand(&[5, 2, 3, 4]).unwrap(),
        a.diagonal(0, 1, 2).unwrap(),
    ];
    for w in &views {
        assert_eq!(w.data_ptr(), p);
        assert!(w.storage().is_same(a.storage()));
    }
    assert_eq!(
        a.narrow(2, 1, 2).unwrap().data_ptr() as usize,
        p as usize + es
    );
    assert_eq!(
        a.select(1, 2).unwrap().data_ptr() as usize,
        p as usize + 8 * es
    );
    assert_eq!(a.slice(2, Some(1), None, 2).unwrap().stride(), &[12, 4, 2]);
    let parts = a.split(1, 1).unwrap();
    assert_eq!(parts[2].data_ptr() as usize, p as usize + 8 * es);
    assert_eq!(
        v(&a.unfold(2, 2, 2).unwrap().select(3, 1).unwrap()),
        vec![1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23]
    );
    // reshape of a non-viewable layout copies; view refuses
    let t = a.transpose(1, 2).unwrap();
    assert!(!t.reshape(&[24]).unwrap().storage().is_same(a.storage()));
    let e = t.view(&[24]).unwrap_err();
    assert!(e
        .message()
        .starts_with("view size is not compatible with input tensor's size and stride"));
}

#[test]
fn writes_through_views_and_version_counter() {
    let a = Tensor::zeros(&[3, 4], ()).unwrap();
    let col = a.select(1, 2).unwrap();
    let v0 = a.version();
    col.fill_(5.0).unwrap();
    assert_eq!(a.version(), v0 + 1);
    assert_eq!(a.sum().unwrap().item_f64().unwrap(), 15.0);
    a.t().unwrap().add_(1.0).unwrap();
    assert_eq!(col.version(), v0 + 2, "views share the counter");
    assert_eq!(a.to_vec::<f32>().unwrap()[2], 6.0);
    // copy_ broadcasts and converts dtype
    let b = Tensor::zeros(&[2, 3], DType::I32).unwrap();
    b.copy_(&tensor([1.7, -2.9, 3.2]).unwrap()).unwrap();
    assert_eq!(b.to_vec::<i32>().unwrap(), vec![1, -2, 3, 1, -2, 3]);
    // in-place on an expanded view is refused
    let x = Tensor::zeros(&[3], ()).unwrap().expand(&[2, 3]).unwrap();
    assert!(x.add_(1.0).is_err());
    // in-place int += float cannot cast
    let e = ar(3).add_(0.5).unwrap_err();
    assert!(
        e.message()
            .contains("result type Float can't be cast to the desired output type Long"),
        "{e}"
    );
}

#[test]
fn rust_indexing_matches_numpy_rules() {
    let a = ar(24).reshape(&[2, 3, 4]).unwrap();
    assert_eq!(
        v(&a.i((1, .., step(0..4, 2))).unwrap()),
        vec![12, 14, 16, 18, 20, 22]
    );
    assert_eq!(a.i((NEW_AXIS, ELLIPSIS, 1)).unwrap().shape(), &[1, 2, 3]);
    assert_eq!(v(&a.i((-1, -1, -1)).unwrap()), vec![23]);
    assert_eq!(a.i(1..).unwrap().shape(), &[1, 3, 4]);
    assert_eq!(a.i((.., ..=1)).unwrap().shape(), &[2, 2, 4]);
    // views for basic indexing
    assert!(a.i((0, 1..3)).unwrap().storage().is_same(a.storage()));
    // integer-tensor and mask indices
    let idx = tensor([2, 0]).unwrap();
    assert_eq!(v(&a.i((0, &idx, 0)).unwrap()), vec![8, 0]);
    let mask = a.gt(20).unwrap();
    assert_eq!(
        v(&a.index(&[TensorIndex::Tensor(mask)]).unwrap()),
        vec![21, 22, 23]
    );
    // assignment
    let z = Tensor::zeros(&[3, 3], DType::I64).unwrap();
    z.index_put_(&[(..).into(), 1.into()], &tensor([7]).unwrap(), false)
        .unwrap();
    z.index_put_(
        &[
            tensor([0, 0]).unwrap().into(),
            tensor([2, 2]).unwrap().into(),
        ],
        &tensor([1, 1]).unwrap(),
        true,
    )
    .unwrap();
    assert_eq!(v(&z), vec![0, 7, 2, 0, 7, 0, 0, 7, 0]);
    // errors
    assert_eq!(a.i((0, 0, 0, 0)).unwrap_err().kind(), ErrorKind::Index);
    assert_eq!(a.i(5).unwrap_err().kind(), ErrorKind::Index);
    assert_eq!(
        a.i((0, tensor([3]).unwrap())).unwrap_err().kind(),
        ErrorKind::Index
    );
}

#[test]
fn creation_and_dtype_inference_follow_torch() {
    assert_eq!(tensor([1.0, 2.0]).unwrap().dtype(), DType::F32);
    assert_eq!(tensor([1, 2]).unwrap().dtype(), DType::I64);
    assert_eq!(tensor([[true], [false]]).unwrap().shape(), &[2, 1]);
    assert_eq!(Tensor::full(&[2], 3, ()).unwrap().dtype(), DType::I64);
    assert_eq!(
        Tensor::arange(0, 10, 3, ())
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![0, 3, 6, 9]
    );
    assert_eq!(Tensor::arange(1.0, 2.0, 0.25, ()).unwrap().numel(), 4);
    assert_eq!(
        Tensor::linspace(0.0, 1.0, 5, ())
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![0.0, 0.25, 0.5, 0.75, 1.0]
    );
    let l = Tensor::logspace(0.0, 2.0, 3, 10.0, DType::F64)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    assert_eq!(l, vec![1.0, 10.0, 100.0]);
    assert_eq!(
        v(&Tensor::eye(2, Some(3), DType::I64).unwrap()),
        vec![1, 0, 0, 0, 1, 0]
    );
    assert!(Tensor::arange(0, 10, 0, ()).is_err());
    assert!(Tensor::arange(0, 10, -1, ()).is_err());
    assert!(tensor(vec![vec![1, 2], vec![3]]).is_err(), "ragged data");
    let z = Tensor::zeros(&[3, 0, 2], ()).unwrap();
    assert_eq!(
        z.sum_dim(Some(&[1]), false, None)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![0.0; 6]
    );
    assert_eq!(z.add(1.0).unwrap().shape(), &[3, 0, 2]);
}

#[test]
fn error_cases_are_clean_errors() {
    let a = Tensor::ones(&[2, 3], ()).unwrap();
    // shapes that don't broadcast
    let e = a.add(Tensor::ones(&[4], ()).unwrap()).unwrap_err();
    assert!(
        e.message().contains("must match the size of tensor b (4)"),
        "{e}"
    );
    // out-of-range dims and indices
    assert_eq!(
        a.sum_dim(Some(&[2]), false, None).unwrap_err().kind(),
        ErrorKind::Index
    );
    assert_eq!(a.select(0, 2).unwrap_err().kind(), ErrorKind::Index);
    assert_eq!(
        a.index_select(1, &tensor([3]).unwrap()).unwrap_err().kind(),
        ErrorKind::Index
    );
    // shape products that overflow
    assert!(Tensor::empty(&[usize::MAX / 2, 4], DType::F32).is_err());
    assert!(a.expand(&[i64::MAX, i64::MAX, 3]).is_err());
    // as_strided past the storage
    let e = a.as_strided(&[3, 3], &[3, 1], None).unwrap_err();
    assert!(
        e.message().contains("out of bounds for storage of size 24"),
        "{e}"
    );
    // reshape with two -1s
    assert_eq!(
        a.reshape(&[-1, -1]).unwrap_err().message(),
        "only one dimension can be inferred"
    );
    // an op on a dtype it doesn't support
    let e = tensor([true]).unwrap().neg().unwrap_err();
    assert!(e
        .message()
        .contains("Negation, the `-` operator, on a bool tensor is not supported"));
    assert!(a.bitwise_and(&a).is_err());
    assert!(
        a.matmul(&Tensor::ones(&[3], DType::F64).unwrap()).is_err(),
        "matmul does not promote"
    );
    // matmul shapes name the op and the shapes
    let e = a.matmul(&Tensor::ones(&[4, 5], ()).unwrap()).unwrap_err();
    assert_eq!(
        e.message(),
        "matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)"
    );
    // NaN and inf propagate
    let x = tensor([f64::NAN, f64::INFINITY, 1.0]).unwrap();
    let s = x.sum().unwrap().item_f64().unwrap();
    assert!(s.is_nan());
    assert!(x.max().unwrap().item_f64().unwrap().is_nan());
    assert_eq!(x.exp().unwrap().to_vec_f64().unwrap()[1], f64::INFINITY);
    assert!(x.div(0.0).unwrap().to_vec_f64().unwrap()[0].is_nan());
    // integer division by zero is an error, not a trap
    assert!(tensor([1]).unwrap().div_mode(0, Some("floor")).is_err());
    assert!(tensor([1]).unwrap().remainder(0).is_err());
    // item on a multi-element tensor
    assert!(a.item().is_err());
}

#[test]
fn tensors_are_send_sync_and_threads_can_share_them() {
    let a = Tensor::zeros(&[1000], DType::I64).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            let a = a.clone();
            s.spawn(move || {
                for _ in 0..100 {
                    a.add_(1).unwrap();
                }
            });
        }
    });
    // storage locks serialise the in-place writes: no update is lost
    assert!(a.to_vec::<i64>().unwrap().iter().all(|&x| x == 400));
}

#[test]
fn caching_allocator_reuses_large_blocks() {
    let n = 1 << 22;
    let before = ferrotorch_core::storage::cache_hits();
    for _ in 0..3 {
        let t = Tensor::empty(&[n], DType::F32).unwrap();
        assert_eq!(t.data_ptr() as usize % 64, 0);
    }
    assert!(ferrotorch_core::storage::cache_hits() >= before + 2);
}

#[test]
fn tiled_transposed_elementwise_matches_index_arithmetic() {
    // Large enough to take the tiled path (Note [Tiled elementwise loops]).
    let (r, c) = (37usize, 300usize);
    let m = Tensor::arange(0, (r * c) as i64, 1, DType::F32)
        .unwrap()
        .reshape(&[r as i64, c as i64])
        .unwrap();
    let n = Tensor::arange(0, (r * c) as i64, 1, DType::F32)
        .unwrap()
        .mul(0.5)
        .unwrap()
        .reshape(&[c as i64, r as i64])
        .unwrap();
    let s = m.t().unwrap().add(&n).unwrap().to_vec::<f32>().unwrap();
    for i in 0..c {
        for j in 0..r {
            let want = (j * c + i) as f32 + 0.5 * (i * r + j) as f32;
            assert_eq!(s[i * r + j], want, "({i}, {j})");
        }
    }
    // batched transposes too (outer dims around the tiled pair)
    let b = Tensor::arange(0, 2 * 20 * 30, 1, DType::I64)
        .unwrap()
        .reshape(&[2, 20, 30])
        .unwrap();
    let bt = b.transpose(1, 2).unwrap();
    let sum = bt.add(bt.contiguous().unwrap()).unwrap();
    assert_eq!(
        sum.to_vec_i64().unwrap(),
        bt.mul(2).unwrap().to_vec_i64().unwrap()
    );
    // 1- and 2-byte elements gathered through the scratch tile
    for dt in [DType::U8, DType::I16] {
        let x = Tensor::arange(0, 40 * 33, 1, DType::I64)
            .unwrap()
            .remainder(97)
            .unwrap()
            .to_dtype(dt)
            .unwrap()
            .reshape(&[40, 33])
            .unwrap();
        let y = x
            .t()
            .unwrap()
            .add(x.t().unwrap().contiguous().unwrap())
            .unwrap();
        let (xv, yv) = (x.to_vec_i64().unwrap(), y.to_vec_i64().unwrap());
        for i in 0..33 {
            for j in 0..40 {
                assert_eq!(yv[i * 40 + j], 2 * xv[j * 33 + i], "{dt:?} ({i}, {j})");
            }
        }
    }
}

#[test]
fn dropout_zeroes_about_p_and_rescales_the_rest() {
    let g = ferrotorch_core::native::random::Generator::new(7);
    let x = Tensor::ones(&[100_000], ()).unwrap();
    let y = x
        .dropout(0.3, true, Some(&g))
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let zeros = y.iter().filter(|&&v| v == 0.0).count() as f64 / y.len() as f64;
    assert!((zeros - 0.3).abs() < 0.01, "{zeros}");
    assert!(y.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.7).abs() < 1e-6));
    assert!(
        x.dropout(0.3, false, None).unwrap().is_same(&x),
        "eval mode is the identity"
    );
    assert!(x.dropout(1.5, true, None).is_err());
}

#[test]
fn pointwise_in_place_variants_write_through() {
    let a = tensor([1.0, 2.0]).unwrap();
    a.addcmul_(
        &tensor([2.0, 3.0]).unwrap(),
        &tensor([4.0, 5.0]).unwrap(),
        0.5,
    )
    .unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![5.0, 9.5]);
    a.addcdiv_(
        &tensor([1.0, 1.0]).unwrap(),
        &tensor([2.0, 4.0]).unwrap(),
        2,
    )
    .unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![6.0, 10.0]);
    a.lerp_(&tensor([10.0, 0.0]).unwrap(), 0.25).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![7.0, 7.5]);
    a.clamp_(Some(7.2), None::<f64>).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![7.2, 7.5]);
    let m = tensor([true, false]).unwrap();
    a.masked_fill_(&m, -1.0).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![-1.0, 7.5]);
}

#[test]
fn zero_dim_inputs_follow_torch_instead_of_panicking() {
    use ferrotorch_core::dispatch::{call, IValue};
    let s = Tensor::scalar_tensor(2.0);
    for op in ["sum", "mean", "amax", "logsumexp"] {
        let out = call(op, &[s.clone().into(), IValue::Int(0)], &[])
            .unwrap()
            .into_tensor()
            .unwrap();
        assert_eq!((out.dim(), out.item_f64().unwrap()), (0, 2.0), "{op}");
    }
    assert_eq!(s.flip(&[0]).unwrap().item_f64().unwrap(), 2.0);
    assert_eq!(s.chunk(2, 0).unwrap_err().kind(), ErrorKind::Runtime);
    assert_eq!(s.unbind(0).unwrap_err().kind(), ErrorKind::Index);
    assert_eq!(s.split(1, 0).unwrap_err().kind(), ErrorKind::Runtime);
    assert_eq!(s.roll(&[1], &[0]).unwrap_err().kind(), ErrorKind::Index);
    assert_eq!(s.unflatten(0, &[1]).unwrap_err().kind(), ErrorKind::Runtime);
    // logit with eps over one half: torch gives ±log(0.6 / 0.4)
    let x = Tensor::from_slice(&[0.2f64, 0.9]);
    let y = x.logit(Some(0.6)).unwrap().to_vec::<f64>().unwrap();
    let l = (0.6f64 / 0.4).ln();
    assert!(
        (y[0] - l).abs() < 1e-12 && (y[1] + l).abs() < 1e-12,
        "{y:?}"
    );
}

#[test]
fn isclose_allclose_and_equal_follow_torch() {
    // expected values printed by torch 2.15 for the same calls
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    let a = Tensor::from_slice(&[1.0f32, nan, inf, 1.0001]);
    let b = Tensor::from_slice(&[1.0f32, nan, inf, 1.0]);
    let c = a.isclose(&b, 1e-5, 1e-8, false).unwrap();
    assert_eq!(c.to_vec::<bool>().unwrap(), vec![true, false, true, false]);
    // float32 rounding of the bound: 1.00001 is not within 1e-5 of 1.0
    let x = Tensor::from_slice(&[1.0f32, nan]);
    let y = Tensor::from_slice(&[1.00001f32, nan]);
    let c = x.isclose(&y, 1e-5, 1e-8, true).unwrap();
    assert_eq!(c.to_vec::<bool>().unwrap(), vec![false, true]);
    let i = Tensor::from_slice(&[1i64, 2]);
    let j = Tensor::from_slice(&[1i64, 3]);
    let c = i.isclose(&j, 1e-5, 1e-8, false).unwrap();
    assert_eq!(c.to_vec::<bool>().unwrap(), vec![true, false]);
    let ones = |s: &[usize], d| Tensor::ones(s, d).unwrap();
    assert!(ones(&[2, 1], DType::F32)
        .allclose(&ones(&[3], DType::F32), 1e-5, 1e-8, false)
        .unwrap());
    let e = ones(&[2], DType::F32)
        .isclose(&ones(&[2], DType::F64), 1e-5, 1e-8, false)
        .unwrap_err();
    assert_eq!(e.to_string(), "Float did not match Double");
    let e = ones(&[2], DType::F32)
        .isclose(&ones(&[2], DType::F32), -1.0, 1e-8, false)
        .unwrap_err();
    assert!(e
        .to_string()
        .contains("rtol must be greater than or equal to zero, but got -1"));
    assert!(ones(&[2], DType::F32)
        .isclose(&ones(&[3], DType::F32), 1e-5, 1e-8, false)
        .is_err());
    assert!(Tensor::from_slice(&[1.0f32])
        .equal(&Tensor::from_slice(&[1i64]))
        .unwrap());
    assert!(!Tensor::from_slice(&[nan])
        .equal(&Tensor::from_slice(&[nan]))
        .unwrap());
    assert!(!ones(&[2], DType::F32)
        .equal(&ones(&[3], DType::F32))
        .unwrap());
}

#[test]
fn elementwise_ops_on_transposed_operands_match_a_plain_loop() {
    // Tiled walk with in-register 8×8 transposes for 4-byte elements (and
    // the scalar gather for others): block edges, odd sizes, both orders.
    for (n, m) in [(40usize, 40usize), (37, 53), (16, 129)] {
        for dt in [DType::F32, DType::F64, DType::I32] {
            let x = Tensor::arange(0.0, (n * m) as f64, 1.0, dt)
                .unwrap()
                .reshape(&[n as i64, m as i64])
                .unwrap();
            let z = Tensor::arange(0.0, (n * m) as f64, 1.0, dt)
                .unwrap()
                .mul(3)
                .unwrap()
                .reshape(&[m as i64, n as i64])
                .unwrap();
            let xv = x.to_vec_f64().unwrap();
            let zv = z.to_vec_f64().unwrap();
            let y = x.t().unwrap().add(&z).unwrap().to_vec_f64().unwrap();
            let y2 = z.add(x.t().unwrap()).unwrap().to_vec_f64().unwrap();
            for i in 0..m {
                for j in 0..n {
                    let want = xv[j * m + i] + zv[i * n + j];
                    assert_eq!(y[i * n + j], want, "{dt:?} {n}x{m} at ({i}, {j})");
                    assert_eq!(y2[i * n + j], want, "{dt:?} {n}x{m} at ({i}, {j})");
                }
            }
        }
    }
}

#[test]
fn sum_over_leading_dims_matches_a_direct_loop() {
    // Small contiguous f32 tensors summed over leading dims take a
    // column-accumulating path (a bias gradient's sum_to); compare it, and
    // the general path it falls back to, with f64 loops.
    let (a, b, c) = (5usize, 4usize, 3usize);
    let v: Vec<f32> = (0..a * b * c)
        .map(|i| ((i * 37) % 23) as f32 * 0.37 - 4.0)
        .collect();
    let x = Tensor::from_vec(v.clone(), &[a, b, c]).unwrap();
    let at = |i: usize, j: usize, k: usize| v[(i * b + j) * c + k] as f64;
    // dims [0]
    let s0 = x.sum_dim(Some(&[0]), false, None).unwrap();
    assert_eq!(s0.shape(), &[b, c]);
    let got = s0.to_vec::<f32>().unwrap();
    for j in 0..b {
        for k in 0..c {
            let want: f64 = (0..a).map(|i| at(i, j, k)).sum();
            assert!(
                (got[j * c + k] as f64 - want).abs() < 1e-5,
                "[0] at {j},{k}"
            );
        }
    }
    // dims [1, 0] with keepdim (order does not matter)
    let s01 = x.sum_dim(Some(&[1, 0]), true, None).unwrap();
    assert_eq!(s01.shape(), &[1, 1, c]);
    let got = s01.to_vec::<f32>().unwrap();
    for (k, g) in got.iter().enumerate() {
        let want: f64 = (0..a)
            .flat_map(|i| (0..b).map(move |j| (i, j)))
            .map(|(i, j)| at(i, j, k))
            .sum();
        assert!((*g as f64 - want).abs() < 1e-4, "[0, 1] at {k}");
    }
    // a transposed (non-contiguous) input and a trailing dim take the
    // general path and agree
    let t = x.transpose(0, 2).unwrap();
    let st = t.sum_dim(Some(&[2]), false, None).unwrap();
    let want = x
        .sum_dim(Some(&[0]), false, None)
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    let (p, q) = (
        st.to_vec::<f32>().unwrap(),
        want.contiguous().unwrap().to_vec::<f32>().unwrap(),
    );
    for (p, q) in p.iter().zip(&q) {
        assert!((p - q).abs() < 1e-5);
    }
    // empty leading dim: zeros
    let e = Tensor::zeros(&[0, 3], DType::F32).unwrap();
    assert_eq!(
        e.sum_dim(Some(&[0]), false, None)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![0.0; 3]
    );
}

#[test]
fn arg_reductions_over_a_non_empty_dim_of_no_rows_are_empty() {
    // torch.zeros(0, 4).argmax(dim=-1) is an empty (0,) tensor; only the
    // reduced dim must be non-empty (with no dim, any emptiness is an error)
    let e = Tensor::zeros(&[0, 4], DType::F32).unwrap();
    let (v, i) = e.max_dim(-1, false).unwrap();
    assert_eq!((v.shape().to_vec(), i.shape().to_vec()), (vec![0], vec![0]));
    assert!(e.max_dim(0, false).is_err());
}
