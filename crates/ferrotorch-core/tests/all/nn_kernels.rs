//! The f32 fast paths of the nn kernels against direct f64 loops.
//!
//! conv2d, over geometries that take each of its f32 paths: the direct
//! kernel (Note [Direct convolution]) with padding, dilation, groups, bias,
//! channel counts that are not a multiple of its block (6 on AVX2, 8 on
//! AVX-512; scripts/test.sh runs these tests at both levels), images narrower
//! than its tile, batch 1, strides 2 and 3 (its phase planes), a different
//! stride per dim, small images stacked into one buffer, and inputs too
//! deep for one pass over all tiles per channel block, and taps in chunks
//! (AVX2, Note [Tap chunks]); Winograd F(2×2, 3×3) (3×3 stride 1 on maps
//! of 14×14 and more, Note [Winograd convolution]: odd map sizes, channel
//! counts off the kernel's block, padding 0-2, many blocks of tiles, and a
//! sweep of small random 3×3 geometries with paddings 0-3 per side;
//! scripts/test.sh also runs every case it can take through it); the
//! batched im2col + GEMM path (small maps
//! and strided layers over a batch, Note [Batched im2col], also in chunks
//! of images); and the im2col + GEMM path per image band (few output
//! channels, a small map at batch 1). Max
//! pooling without gradients (values only, in f32) and batch norm in eval
//! (one folded affine pass). The fused eval convolution
//! (`conv2d_affine_eval`) against the separate ops it replaces.

use ferrotorch_core::{DType, Tensor};

/// Deterministic values in [-0.5, 0.5).
fn filled(shape: &[usize], seed: usize) -> (Tensor, Vec<f64>) {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|i| ((i * 7919 + seed * 104_729) % 1000) as f64 / 1000.0 - 0.5)
        .collect();
    let t = Tensor::from_vec(v.iter().map(|&x| x as f32).collect::<Vec<f32>>(), shape).unwrap();
    (t, v)
}

#[allow(clippy::too_many_arguments)]
fn reference(
    x: &[f64],
    [n, c, h, w]: [usize; 4],
    wt: &[f64],
    [o, kh, kw]: [usize; 3],
    bias: Option<&[f64]>,
    stride: [usize; 2],
    pad: [usize; 2],
    dil: usize,
    groups: usize,
) -> (Vec<f64>, [usize; 4]) {
    let ho = (h + 2 * pad[0] - dil * (kh - 1) - 1) / stride[0] + 1;
    let wo = (w + 2 * pad[1] - dil * (kw - 1) - 1) / stride[1] + 1;
    let (cg, og) = (c / groups, o / groups);
    let mut out = vec![0.0; n * o * ho * wo];
    for b in 0..n {
        for co in 0..o {
            let g = co / og;
            for oh in 0..ho {
                for ow in 0..wo {
                    let mut s = bias.map_or(0.0, |bv| bv[co]);
                    for ci in 0..cg {
                        for i in 0..kh {
                            for j in 0..kw {
                                let ih = (oh * stride[0] + i * dil) as isize - pad[0] as isize;
                                let iw = (ow * stride[1] + j * dil) as isize - pad[1] as isize;
                                if ih < 0 || iw < 0 || ih >= h as isize || iw >= w as isize {
                                    continue;
                                }
                                let xi =
                                    ((b * c + g * cg + ci) * h + ih as usize) * w + iw as usize;
                                s += x[xi] * wt[((co * cg + ci) * kh + i) * kw + j];
                            }
                        }
                    }
                    out[((b * o + co) * ho + oh) * wo + ow] = s;
                }
            }
        }
    }
    (out, [n, o, ho, wo])
}

#[test]
fn conv2d_matches_a_direct_loop_on_every_path() {
    // (input [n, c, h, w], out channels, kernel [kh, kw], stride, padding, dilation, groups, bias)
    #[allow(clippy::type_complexity)]
    let cases: &[(
        [usize; 4],
        usize,
        [usize; 2],
        [usize; 2],
        [usize; 2],
        usize,
        usize,
        bool,
    )] = &[
        ([2, 12, 20, 20], 16, [3, 3], [1, 1], [1, 1], 1, 1, true), // direct
        ([1, 8, 23, 17], 24, [3, 3], [1, 1], [1, 1], 1, 1, false), // batch 1
        ([3, 5, 30, 40], 15, [5, 3], [1, 1], [2, 0], 1, 1, true),  // odd channels
        ([2, 8, 30, 30], 16, [3, 3], [1, 1], [2, 2], 2, 1, false), // dilation
        ([2, 16, 16, 16], 32, [3, 3], [1, 1], [1, 1], 1, 2, true), // groups
        ([2, 12, 15, 15], 16, [1, 1], [1, 1], [0, 0], 1, 1, true), // 1x1
        ([1, 3, 64, 64], 16, [7, 7], [2, 2], [3, 3], 1, 1, false), // 7x7 stride 2
        ([2, 8, 40, 40], 20, [3, 3], [2, 2], [1, 1], 1, 1, true),  // 3x3 stride 2
        ([2, 8, 40, 40], 16, [1, 1], [2, 2], [0, 0], 1, 1, false), // 1x1 stride 2
        ([1, 4, 41, 41], 24, [3, 3], [2, 2], [2, 2], 2, 1, true),  // stride + dilation
        ([1, 4, 50, 50], 24, [3, 3], [3, 3], [1, 1], 1, 1, false), // stride 3
        ([2, 16, 30, 30], 32, [3, 3], [2, 2], [1, 1], 1, 2, true), // stride 2, groups
        ([1, 4, 30, 60], 8, [3, 5], [1, 2], [1, 2], 1, 1, true),   // strides differ
        ([10, 16, 7, 7], 32, [3, 3], [1, 1], [1, 1], 1, 2, true),  // stacked 7x7 maps
        ([14, 16, 7, 7], 48, [3, 3], [1, 1], [1, 1], 1, 2, false), // two stacks
        ([1, 512, 16, 16], 12, [3, 3], [1, 1], [1, 1], 1, 1, true), // tiles in groups
        ([2, 50, 12, 12], 24, [3, 3], [1, 1], [1, 1], 1, 1, true), // taps in chunks
        ([2, 6, 12, 12], 2, [3, 3], [1, 1], [1, 1], 1, 1, false),  // GEMM: few channels
        ([1, 32, 5, 5], 64, [3, 3], [1, 1], [1, 1], 1, 1, true),   // GEMM: small map
        ([8, 16, 7, 7], 32, [3, 3], [1, 1], [1, 1], 1, 1, true),   // batched: 7x7 maps
        ([2, 8, 14, 14], 24, [3, 3], [2, 2], [1, 1], 1, 1, false), // batched: stride 2
        ([3, 8, 10, 10], 16, [1, 1], [2, 2], [0, 0], 1, 1, true),  // batched: 1x1 stride 2
        ([4, 6, 9, 9], 16, [3, 3], [2, 2], [2, 2], 2, 1, false),   // batched: dilation
        ([29, 256, 8, 8], 16, [3, 3], [1, 1], [1, 1], 1, 1, true), // batched in 2 chunks
        ([2, 16, 28, 28], 16, [3, 3], [1, 1], [1, 1], 1, 1, true), // Winograd
        ([1, 17, 29, 31], 19, [3, 3], [1, 1], [1, 1], 1, 1, false), // Winograd: odd sizes
        ([2, 16, 32, 30], 24, [3, 3], [1, 1], [0, 0], 1, 1, true), // Winograd: no padding
        ([1, 16, 27, 28], 16, [3, 3], [1, 1], [2, 1], 1, 1, true), // Winograd: padding 2, 1
        ([3, 64, 30, 30], 64, [3, 3], [1, 1], [1, 1], 1, 1, false), // Winograd: many blocks
    ];
    for (i, &(shape, o, [kh, kw], stride, pad, dil, groups, with_bias)) in cases.iter().enumerate()
    {
        let (x, xv) = filled(&shape, i);
        let (w, wv) = filled(&[o, shape[1] / groups, kh, kw], i + 100);
        let (b, bv) = filled(&[o], i + 200);
        let y = x
            .conv2d(&w, with_bias.then_some(&b), &stride, &pad, &[dil], groups)
            .unwrap();
        let (want, want_shape) = reference(
            &xv,
            shape,
            &wv,
            [o, kh, kw],
            with_bias.then_some(bv.as_slice()),
            stride,
            pad,
            dil,
            groups,
        );
        assert_eq!(y.shape(), want_shape, "case {i}");
        // Rounding grows with the sum of the products' magnitudes, and
        // Winograd F(4×4) (forced by scripts/test.sh) rounds most: Note
        // [Winograd F(4×4, 3×3)].
        let abs = |v: &[f64]| v.iter().map(|x| x.abs()).collect::<Vec<_>>();
        let (mag, _) = reference(
            &abs(&xv),
            shape,
            &abs(&wv),
            [o, kh, kw],
            None,
            stride,
            pad,
            dil,
            groups,
        );
        let got = y.to_dtype(DType::F64).unwrap().to_vec_f64().unwrap();
        for (j, ((a, b), m)) in got.iter().zip(&want).zip(&mag).enumerate() {
            let err = (a - b).abs();
            assert!(
                err < 1e-4 + 3e-6 * m,
                "case {i} at {j}: {a} vs {b} (error {err}, magnitude {m})"
            );
        }
    }
}

#[test]
fn conv2d_3x3_stride_1_over_random_small_geometries() {
    // Maps of 1-16 pixels a side, paddings 0-3 per side (a map only one
    // tile wide or tall, tiles that hang past the output, rows and columns
    // entirely of padding): the edge handling of each path, and of
    // Winograd when scripts/test.sh forces it.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut pick = |m: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % m as u64) as usize
    };
    for i in 0..40 {
        let shape = [1 + pick(3), 1 + pick(24), 1 + pick(16), 1 + pick(16)];
        let pad = [pick(4), pick(4)];
        if shape[2] + 2 * pad[0] < 3 || shape[3] + 2 * pad[1] < 3 {
            continue;
        }
        let o = 1 + pick(24);
        let (x, xv) = filled(&shape, i + 300);
        let (w, wv) = filled(&[o, shape[1], 3, 3], i + 400);
        let (b, bv) = filled(&[o], i + 500);
        let y = x.conv2d(&w, Some(&b), &[1], &pad, &[1], 1).unwrap();
        let (want, want_shape) =
            reference(&xv, shape, &wv, [o, 3, 3], Some(&bv), [1, 1], pad, 1, 1);
        assert_eq!(y.shape(), want_shape, "case {i}: {shape:?} pad {pad:?}");
        let got = y.to_dtype(DType::F64).unwrap().to_vec_f64().unwrap();
        let err = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(
            err < 1e-4,
            "case {i}: {shape:?} -> {o}, pad {pad:?}: max error {err}"
        );
    }
}

#[test]
fn max_pool2d_without_grad_matches_a_direct_loop() {
    // (input [n, c, h, w], kernel, stride, padding, dilation, ceil_mode)
    #[allow(clippy::type_complexity)]
    let cases: &[(
        [usize; 4],
        [usize; 2],
        [usize; 2],
        [usize; 2],
        [usize; 2],
        bool,
    )] = &[
        ([2, 3, 12, 12], [3, 3], [2, 2], [1, 1], [1, 1], false),
        ([1, 2, 9, 11], [2, 3], [2, 1], [0, 1], [1, 1], true),
        ([1, 1, 10, 10], [3, 2], [1, 2], [1, 0], [2, 2], false),
        ([2, 64, 24, 24], [3, 3], [2, 2], [1, 1], [1, 1], false),
    ];
    for (i, &(shape, k, s, p, d, ceil)) in cases.iter().enumerate() {
        let (_, mut xv) = filled(&shape, i);
        // a NaN in the first plane propagates to every window that sees it
        xv[5] = f64::NAN;
        let x =
            Tensor::from_vec(xv.iter().map(|&v| v as f32).collect::<Vec<f32>>(), &shape).unwrap();
        let y = x.max_pool2d(&k, &s, &p, &d, ceil).unwrap();
        let [n, c, h, w] = shape;
        let (ho, wo) = (y.shape()[2], y.shape()[3]);
        // output sizes as PyTorch computes them
        let len = |inp: usize, k: usize, s: usize, p: usize, d: usize| {
            let num = inp + 2 * p - d * (k - 1) - 1;
            let mut o = if ceil { num.div_ceil(s) } else { num / s } + 1;
            if ceil && (o - 1) * s >= inp + p {
                o -= 1;
            }
            o
        };
        assert_eq!(
            (ho, wo),
            (
                len(h, k[0], s[0], p[0], d[0]),
                len(w, k[1], s[1], p[1], d[1])
            )
        );
        let got = y.to_dtype(DType::F64).unwrap().to_vec_f64().unwrap();
        for b in 0..n * c {
            for oh in 0..ho {
                for ow in 0..wo {
                    let mut want = f64::NEG_INFINITY;
                    for ki in 0..k[0] {
                        for kj in 0..k[1] {
                            let ih = (oh * s[0] + ki * d[0]) as isize - p[0] as isize;
                            let iw = (ow * s[1] + kj * d[1]) as isize - p[1] as isize;
                            if ih >= 0 && iw >= 0 && (ih as usize) < h && (iw as usize) < w {
                                let v = xv[b * h * w + ih as usize * w + iw as usize];
                                if v.is_nan() || want.is_nan() {
                                    want = f64::NAN;
                                } else {
                                    want = want.max(v);
                                }
                            }
                        }
                    }
                    let g = got[(b * ho + oh) * wo + ow];
                    assert!(
                        (g.is_nan() && want.is_nan()) || (g - want).abs() < 1e-6,
                        "case {i}: plane {b} ({oh}, {ow}): {g} vs {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn batch_norm_in_eval_is_the_running_statistics_affine_map() {
    let (x, xv) = filled(&[2, 3, 4, 5], 1);
    let (mean, mv) = filled(&[3], 2);
    let var_v = [0.5f64, 1.5, 2.0];
    let var =
        Tensor::from_vec(var_v.iter().map(|&v| v as f32).collect::<Vec<f32>>(), &[3]).unwrap();
    let (w, wv) = filled(&[3], 3);
    let (b, bv) = filled(&[3], 4);
    let eps = 1e-5;
    for affine in [true, false] {
        let (wo, bo) = if affine {
            (Some(&w), Some(&b))
        } else {
            (None, None)
        };
        let y = x
            .batch_norm(Some(&mean), Some(&var), wo, bo, false, 0.1, eps)
            .unwrap();
        let got = y.to_dtype(DType::F64).unwrap().to_vec_f64().unwrap();
        for (i, (&g, &xi)) in got.iter().zip(&xv).enumerate() {
            let ch = (i / 20) % 3;
            let mut want = (xi - mv[ch]) / (var_v[ch] + eps).sqrt();
            if affine {
                want = want * wv[ch] + bv[ch];
            }
            assert!(
                (g - want).abs() < 1e-5,
                "affine {affine}, element {i}: {g} vs {want}"
            );
        }
    }
}

#[test]
fn fused_eval_convolution_equals_the_separate_ops() {
    // (input, out channels, kernel, stride, padding, groups, residual, relu)
    #[allow(clippy::type_complexity)]
    let cases: &[([usize; 4], usize, usize, usize, usize, usize, bool, bool)] = &[
        ([2, 8, 20, 20], 16, 3, 1, 1, 1, true, true), // direct
        ([1, 3, 64, 64], 16, 7, 2, 3, 1, false, true),
        ([2, 16, 30, 30], 32, 3, 2, 1, 2, true, false),
        ([2, 8, 20, 20], 16, 1, 1, 0, 1, false, false),
        ([8, 16, 7, 7], 32, 3, 1, 1, 1, true, true), // batched im2col
        ([2, 16, 14, 14], 32, 3, 2, 1, 1, false, true),
        ([2, 16, 28, 28], 20, 3, 1, 1, 1, true, true), // Winograd
        ([1, 16, 29, 29], 16, 3, 1, 1, 1, false, false), // Winograd, odd map
    ];
    for (i, &(shape, o, k, s, p, g, with_res, relu)) in cases.iter().enumerate() {
        let (x, _) = filled(&shape, i);
        let (w, _) = filled(&[o, shape[1] / g, k, k], i + 10);
        let scale: Vec<f32> = (0..o).map(|c| 0.5 + c as f32 * 0.1).collect();
        let shift: Vec<f32> = (0..o).map(|c| c as f32 * 0.03 - 0.2).collect();
        let plain = x.conv2d(&w, None, &[s], &[p], &[1], g).unwrap();
        let (res, _) = filled(plain.shape(), i + 20);
        let per = |v: &[f32]| {
            Tensor::from_vec(v.to_vec(), &[o])
                .unwrap()
                .reshape(&[1, -1, 1, 1])
                .unwrap()
        };
        let mut want = plain.mul(per(&scale)).unwrap().add(per(&shift)).unwrap();
        if with_res {
            want = want.add(&res).unwrap();
        }
        if relu {
            want = want.relu().unwrap();
        }
        let got = x
            .conv2d_affine_eval(
                &w,
                &[s],
                &[p],
                &[1],
                g,
                &scale,
                &shift,
                with_res.then_some(&res),
                relu,
            )
            .unwrap();
        // Without a direct kernel (FERROTORCH_CPU_LEVEL=baseline) it
        // declines, except on the batched im2col path.
        let Some(got) = got else {
            assert!(
                !ferrotorch_kernels::conv::available(),
                "case {i}: the fused kernel should apply"
            );
            continue;
        };
        assert_eq!(
            got.to_vec::<f32>().unwrap(),
            want.to_vec::<f32>().unwrap(),
            "case {i}"
        );
    }
    // Declined (None): inputs that need gradients, other dtypes.
    let (x, _) = filled(&[1, 8, 20, 20], 0);
    let (w, _) = filled(&[8, 8, 3, 3], 1);
    let ones = vec![1.0f32; 8];
    let run = |x: &Tensor, w: &Tensor, res: Option<&Tensor>, scale: &[f32]| {
        x.conv2d_affine_eval(w, &[1], &[1], &[1], 1, scale, &ones, res, true)
    };
    let xg = x.detach().requires_grad_(true).unwrap();
    assert!(run(&xg, &w, None, &ones).unwrap().is_none());
    let x64 = x.to_dtype(DType::F64).unwrap();
    assert!(run(&x64, &w.to_dtype(DType::F64).unwrap(), None, &ones)
        .unwrap()
        .is_none());
    // Errors: per-channel vectors of the wrong length, a residual of the
    // wrong shape (checked before any value is read).
    let e = run(&x, &w, None, &ones[..7]).unwrap_err().to_string();
    assert!(e.contains("expected 8 scales"), "{e}");
    let (small, _) = filled(&[1, 8, 10, 10], 3);
    let e = run(&x, &w, Some(&small), &ones).unwrap_err().to_string();
    assert!(e.contains("residual of shape [1, 8, 10, 10]"), "{e}");
}
