//! conv2d against a direct f64 loop, over geometries that take each of the
//! f32 paths: the direct stride-1 kernel (Note [Direct convolution]) with
//! padding, dilation, groups, bias, channel counts that are not a multiple
//! of its block, images narrower than its tile, and batch 1; and the
//! im2col + GEMM path (strides, few output channels, small maps).

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
    stride: usize,
    pad: [usize; 2],
    dil: usize,
    groups: usize,
) -> (Vec<f64>, [usize; 4]) {
    let ho = (h + 2 * pad[0] - dil * (kh - 1) - 1) / stride + 1;
    let wo = (w + 2 * pad[1] - dil * (kw - 1) - 1) / stride + 1;
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
                                let ih = (oh * stride + i * dil) as isize - pad[0] as isize;
                                let iw = (ow * stride + j * dil) as isize - pad[1] as isize;
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
        usize,
        [usize; 2],
        usize,
        usize,
        bool,
    )] = &[
        ([2, 16, 20, 20], 16, [3, 3], 1, [1, 1], 1, 1, true), // direct
        ([1, 8, 23, 17], 24, [3, 3], 1, [1, 1], 1, 1, false), // direct, batch 1
        ([3, 5, 30, 40], 15, [5, 3], 1, [2, 0], 1, 1, true),  // direct, odd channels
        ([2, 8, 30, 30], 16, [3, 3], 1, [2, 2], 2, 1, false), // direct, dilation
        ([2, 16, 16, 16], 32, [3, 3], 1, [1, 1], 1, 2, true), // direct, groups
        ([2, 12, 15, 15], 16, [1, 1], 1, [0, 0], 1, 1, true), // direct, 1x1
        ([2, 8, 17, 17], 16, [3, 3], 2, [1, 1], 1, 1, true),  // GEMM: stride 2
        ([2, 6, 12, 12], 2, [3, 3], 1, [1, 1], 1, 1, false),  // GEMM: few channels
        ([1, 32, 5, 5], 64, [3, 3], 1, [1, 1], 1, 1, true),   // GEMM: small map
    ];
    for (i, &(shape, o, [kh, kw], stride, pad, dil, groups, with_bias)) in cases.iter().enumerate()
    {
        let (x, xv) = filled(&shape, i);
        let (w, wv) = filled(&[o, shape[1] / groups, kh, kw], i + 100);
        let (b, bv) = filled(&[o], i + 200);
        let y = x
            .conv2d(&w, with_bias.then_some(&b), &[stride], &pad, &[dil], groups)
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
        let got = y.to_dtype(DType::F64).unwrap().to_vec_f64().unwrap();
        let err = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(err < 1e-4, "case {i}: max error {err}");
    }
}
