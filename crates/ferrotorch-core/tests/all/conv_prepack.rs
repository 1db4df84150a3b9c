//! Eager convolutions under `no_grad` keep their filters' Winograd
//! transforms between calls (Note [Prepacked convolution filters]): a
//! write through ferrotorch is seen by the next call, and so is a write
//! that bypasses the version counter once the storage's address went to
//! foreign code (`mark_exported`, as NumPy's and DLPack's views do), since
//! such memory is never kept.

use ferrotorch_core::autograd::no_grad;
use ferrotorch_core::{DType, Tensor};

fn conv(x: &Tensor, w: &Tensor) -> Tensor {
    x.conv2d(w, None, &[1, 1], &[1, 1], &[1, 1], 1).unwrap()
}

/// The same convolution in f64 (never Winograd), as f32.
fn reference(x: &Tensor, w: &Tensor) -> Vec<f32> {
    let (x, w) = (
        x.to_dtype(DType::F64).unwrap(),
        w.to_dtype(DType::F64).unwrap(),
    );
    conv(&x, &w)
        .to_dtype(DType::F32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap()
}

/// `got` against [`reference`], within rounding that grows with the sum of
/// the products' magnitudes (most for Winograd F(4×4), forced by
/// scripts/test.sh: Note [Winograd F(4×4, 3×3)]).
fn assert_close(got: &Tensor, x: &Tensor, w: &Tensor, what: &str) {
    let want = reference(x, w);
    let mag = reference(&x.abs().unwrap(), &w.abs().unwrap());
    let got = got.to_vec::<f32>().unwrap();
    assert_eq!(got.len(), want.len());
    for (i, ((a, b), m)) in got.iter().zip(&want).zip(&mag).enumerate() {
        assert!(
            (a - b).abs() <= 1e-4 * (1.0 + b.abs()) + 3e-6 * m,
            "{what}: {a} vs {b} at {i}"
        );
    }
}

#[test]
fn kept_filter_transforms_follow_every_write() {
    let _g = no_grad();
    // 7×7: Note [Winograd for few tiles] (AVX-512); 16×16: the plain
    // Winograd path
    for hw in [7, 16] {
        let x = Tensor::randn(&[1, 32, hw, hw], DType::F32).unwrap();
        let w = Tensor::randn(&[40, 32, 3, 3], DType::F32).unwrap();
        let y1 = conv(&x, &w);
        assert_close(&y1, &x, &w, "first call");
        // the kept transform: the same bits
        assert_eq!(
            conv(&x, &w).to_vec::<f32>().unwrap(),
            y1.to_vec::<f32>().unwrap()
        );
        w.copy_(&Tensor::randn(&[40, 32, 3, 3], DType::F32).unwrap())
            .unwrap();
        assert_close(&conv(&x, &w), &x, &w, "after copy_");
        // a write foreign code makes, without a version bump
        w.storage().mark_exported();
        conv(&x, &w);
        // SAFETY: element 0 of `w`'s own storage; nothing else uses it now.
        unsafe { *(w.data_ptr() as *mut f32) += 2.0 };
        assert_close(&conv(&x, &w), &x, &w, "after a foreign write");
    }
}
