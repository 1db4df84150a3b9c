//! Issue 18 in the core: crashes and wrong answers found with real programs
//! and hostile inputs, each pinned by a test that failed before its fix.

use ferrotorch_core::tensor::TensorIndex;
use ferrotorch_core::{DType, Tensor};

/// A graph far longer than the stack could drop recursively (Note
/// [Releasing graphs iteratively]). Run on a thread with a small stack so
/// a recursive drop would overflow even at this length.
#[test]
fn long_graphs_are_released_without_recursion() {
    let h = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let w = Tensor::ones(&[3], ())
                .unwrap()
                .requires_grad_(true)
                .unwrap();
            let mut total = Tensor::zeros(&[], ()).unwrap();
            for _ in 0..20_000 {
                total = total.add(w.mul(&w).unwrap().sum().unwrap()).unwrap();
            }
            drop(total);
            // saved tensors chain too: mul saves both inputs
            let mut x = w.clone();
            for _ in 0..20_000 {
                x = x.mul(&w).unwrap();
            }
            drop(x);
            true
        })
        .unwrap();
    assert!(h.join().unwrap());
}

/// Note [Gradient layout contract]: `.grad` has its parameter's strides.
#[test]
fn grad_is_laid_out_like_its_parameter() {
    // a weight used as x @ w.t() on 3-D input: the product's gradient comes
    // back transposed, and must be made contiguous like the weight
    let w = Tensor::randn(&[4, 6], ())
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let x = Tensor::randn(&[2, 3, 6], ()).unwrap();
    x.matmul(&w.t().unwrap())
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    let g = w.grad().unwrap();
    assert_eq!(g.stride(), w.stride());
    // a transposed (dense) parameter gets a transposed gradient
    let base = Tensor::randn(&[6, 4], ()).unwrap();
    let p = base.t().unwrap().detach().requires_grad_(true).unwrap();
    x.matmul(&p.t().unwrap())
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(p.grad().unwrap().stride(), p.stride());
    // values: d/dW sum(x W^T) = column sums of x over all rows
    let want = x
        .reshape(&[6, 6])
        .unwrap()
        .sum_dim(Some(&[0]), false, None)
        .unwrap();
    for r in 0..4 {
        let row = p.grad().unwrap().select(0, r).unwrap();
        assert!(row.allclose(&want, 1e-5, 1e-6, false).unwrap());
    }
    // a non-dense parameter (a strided view made a leaf) gets a contiguous one
    let q = Tensor::randn(&[4, 12], ())
        .unwrap()
        .slice(1, Some(0), None, 2)
        .unwrap()
        .detach()
        .requires_grad_(true)
        .unwrap();
    q.mul(2.0).unwrap().sum().unwrap().backward().unwrap();
    assert!(q.grad().unwrap().is_contiguous());
}

#[test]
fn size_dependent_allocations_fail_cleanly() {
    let e = Tensor::randperm(1 << 40, None).unwrap_err();
    assert!(e.to_string().contains("can't allocate memory"), "{e}");
    let e = Tensor::ones(&[2], ())
        .unwrap()
        .multinomial(1 << 40, true, None)
        .unwrap_err();
    assert!(e.to_string().contains("can't allocate memory"), "{e}");
    let reps = Tensor::from_slice(&[1i64 << 40]);
    let e = Tensor::ones(&[2], ())
        .unwrap()
        .repeat_interleave(&reps, None)
        .unwrap_err();
    assert!(e.to_string().contains("can't allocate memory"), "{e}");
}

#[test]
fn negative_indices_are_out_of_range_for_gather_scatter_and_index_select() {
    let x = Tensor::arange(0, 6, 1, DType::F32)
        .unwrap()
        .reshape(&[2, 3])
        .unwrap();
    let neg = Tensor::from_slice_shape(&[-1i64, 0], &[2, 1]).unwrap();
    let e = x.gather(1, &neg).unwrap_err();
    assert_eq!(
        e.to_string(),
        "gather(): index -1 is out of bounds for dimension 1 with size 3"
    );
    assert!(x.scatter_reduce(1, &neg, &x, None, true).is_err());
    let e = x
        .index_select(1, &Tensor::from_slice(&[-1i64]))
        .unwrap_err();
    assert!(e.to_string().contains("index -1 is out of bounds"), "{e}");
    let e = x.embedding(&Tensor::from_slice(&[-1i64])).unwrap_err();
    assert_eq!(e.to_string(), "index out of range in self");
    // indexing and take still count from the end
    let last = x
        .index(&[TensorIndex::Tensor(Tensor::from_slice(&[-1i64]))])
        .unwrap();
    assert_eq!(last.to_vec::<f32>().unwrap(), vec![3.0, 4.0, 5.0]);
    let t = x.take(&Tensor::from_slice(&[-1i64])).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![5.0]);
}

#[test]
fn creation_checks_that_values_fit_the_dtype() {
    let e = Tensor::full(&[2], 1e30, DType::I64).unwrap_err();
    assert_eq!(
        e.to_string(),
        "value cannot be converted to type int64_t without overflow"
    );
    assert!(Tensor::full(&[2], 300, DType::I8).is_err());
    assert!(Tensor::full(&[2], f64::NAN, DType::I32).is_err());
    assert!(Tensor::full(&[1], 2f64.powi(63), DType::I64).is_err());
    assert_eq!(
        Tensor::full(&[1], -1, DType::U8)
            .unwrap()
            .to_vec::<u8>()
            .unwrap(),
        vec![255]
    );
    let z = Tensor::zeros(&[2], DType::I8).unwrap();
    assert!(z.fill_(300).is_err());
    // arithmetic with a wrapped number still wraps, as in torch
    assert_eq!(z.add(300).unwrap().to_vec::<i8>().unwrap(), vec![44, 44]);
}

#[test]
fn boolean_masks_must_match_the_indexed_dims() {
    let t = Tensor::ones(&[2, 3], ()).unwrap();
    let m = Tensor::from_slice(&[true, false]);
    let e = t
        .index(&[(..).into(), TensorIndex::Tensor(m.clone())])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [2, 3] at index 1"
    );
    assert_eq!(t.index(&[TensorIndex::Tensor(m)]).unwrap().shape(), &[1, 3]);
    let yes = Tensor::scalar_tensor(true);
    assert_eq!(
        t.index(&[TensorIndex::Tensor(yes)]).unwrap().shape(),
        &[1, 2, 3]
    );
}

/// External memory at an address that is not a multiple of the element
/// size is refused before any kernel can read it (a plain branch, so it
/// holds in release builds too), and read-only external memory refuses
/// in-place writes (Note [Read-only storage]).
#[test]
fn external_memory_is_validated_and_read_only_memory_is_never_written() {
    use ferrotorch_core::storage::Storage;
    use ferrotorch_core::tensor::Layout;
    use std::ptr::NonNull;
    let mut buf = vec![0u64; 6];
    let base = buf.as_mut_ptr() as *mut u8;
    // SAFETY: 40 bytes from offset 4 are inside the 48-byte buffer, which
    // outlives the storages (dropped at the end of this test).
    let odd = unsafe { Storage::from_external(NonNull::new(base.add(4)).unwrap(), 40, || ()) };
    let e =
        Tensor::from_storage(odd, Layout::contiguous("t", &[5]).unwrap(), DType::F64).unwrap_err();
    assert!(e.to_string().contains("not aligned"), "{e}");
    // SAFETY: as above, 48 bytes from the start.
    let ro = unsafe { Storage::from_external_readonly(NonNull::new(base).unwrap(), 48, || ()) };
    let t = Tensor::from_storage(ro, Layout::contiguous("t", &[6]).unwrap(), DType::F64).unwrap();
    assert_eq!(t.sum().unwrap().item_f64().unwrap(), 0.0);
    for r in [
        t.add_(1.0),
        t.fill_(2.0),
        t.copy_(&Tensor::ones(&[6], DType::F64).unwrap()),
        t.narrow(0, 1, 2).unwrap().mul_(3.0),
        t.uniform_(0.0, 1.0, None),
        t.exp_(),
    ] {
        let e = r.unwrap_err();
        assert!(e.to_string().contains("read-only"), "{e}");
    }
    assert_eq!(t.sum().unwrap().item_f64().unwrap(), 0.0);
    let c = t.deep_clone().unwrap();
    c.add_(1.0).unwrap();
    assert_eq!(c.sum().unwrap().item_f64().unwrap(), 6.0);
    drop((t, c));
    assert!(buf.iter().all(|&x| x == 0));
}

/// The native float32 layer norm (forward, fused backward, and the
/// differentiable backward used under create_graph) against the composed
/// float64 form (which gradcheck covers), with weight and bias, without
/// either, and over two normalised dims.
#[test]
fn native_layer_norm_matches_the_composed_float64_form() {
    use ferrotorch_core::autograd;
    let _g = super::rng_lock();
    ferrotorch_core::native::random::manual_seed(3);
    for (shape, k, affine) in [
        (vec![4usize, 5, 37], 1usize, true),
        (vec![3, 70], 1, false),
        (vec![2, 3, 4, 5], 2, true),
    ] {
        let ns: Vec<usize> = shape[shape.len() - k..].to_vec();
        let x32 = Tensor::randn(&shape, ())
            .unwrap()
            .mul(3.0)
            .unwrap()
            .add(1.0)
            .unwrap();
        let w32 = Tensor::randn(&ns, ()).unwrap();
        let b32 = Tensor::randn(&ns, ()).unwrap();
        let g32 = Tensor::randn(&shape, ()).unwrap();
        let run = |dt: DType, create: bool| {
            let x = x32
                .to_dtype(dt)
                .unwrap()
                .detach()
                .requires_grad_(true)
                .unwrap();
            let w = w32
                .to_dtype(dt)
                .unwrap()
                .detach()
                .requires_grad_(true)
                .unwrap();
            let b = b32
                .to_dtype(dt)
                .unwrap()
                .detach()
                .requires_grad_(true)
                .unwrap();
            let y = x
                .layer_norm(&ns, affine.then_some(&w), affine.then_some(&b), 1e-5)
                .unwrap();
            let ins = if affine {
                vec![x.clone(), w, b]
            } else {
                vec![x.clone()]
            };
            let gs = autograd::grad(
                std::slice::from_ref(&y),
                &ins,
                Some(&[g32.to_dtype(dt).unwrap()]),
                Some(true),
                create,
                false,
            )
            .unwrap();
            let mut vals = vec![y.to_vec_f64().unwrap()];
            vals.extend(gs.iter().map(|g| g.as_ref().unwrap().to_vec_f64().unwrap()));
            if create {
                // a second derivative: d/dx of sum(dx^2)
                let h = gs[0].as_ref().unwrap().pow(2.0).unwrap().sum().unwrap();
                let hx = autograd::grad(&[h], &[x], None, None, false, false).unwrap();
                vals.push(hx[0].as_ref().unwrap().to_vec_f64().unwrap());
            }
            vals
        };
        let want = run(DType::F64, true);
        for create in [false, true] {
            let got = run(DType::F32, create);
            for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                let scale = b.iter().fold(1.0f64, |m, v| m.max(v.abs()));
                for (p, q) in a.iter().zip(b) {
                    assert!(
                        (p - q).abs() <= 2e-5 * scale,
                        "{shape:?} k={k} affine={affine} create={create} output {i}: {p} vs {q}"
                    );
                }
            }
        }
    }
}
