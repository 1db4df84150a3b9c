//! A small raster plotter for the example: axes with numbered ticks,
//! anti-aliased-free lines, scatter points and shaded bands.

/// An RGB colour.
pub type Rgb = [u8; 3];

/// A plot of data coordinates on a white canvas.
pub struct Plot {
    w: usize,
    h: usize,
    px: Vec<u8>,
    x: (f64, f64),
    y: (f64, f64),
    margin: usize,
}

/// Digits, minus and point as 3x5 bitmaps (rows top to bottom, 3 bits each).
fn glyph(c: char) -> [u8; 5] {
    match c {
        '0' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 1, 1, 1],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        '-' => [0, 0, 7, 0, 0],
        '.' => [0, 0, 0, 0, 2],
        _ => [0; 5],
    }
}

impl Plot {
    /// A `w × h` canvas showing `x` and `y` ranges, with axes and ticks.
    pub fn new(w: usize, h: usize, x: (f64, f64), y: (f64, f64)) -> Plot {
        let mut p = Plot {
            w,
            h,
            px: vec![255; w * h * 3],
            x,
            y,
            margin: 40,
        };
        p.axes();
        p
    }

    fn set(&mut self, c: i64, r: i64, color: Rgb) {
        if c >= 0 && r >= 0 && (c as usize) < self.w && (r as usize) < self.h {
            let i = (r as usize * self.w + c as usize) * 3;
            self.px[i..i + 3].copy_from_slice(&color);
        }
    }

    fn blend(&mut self, c: i64, r: i64, color: Rgb, alpha: f64) {
        if c >= 0 && r >= 0 && (c as usize) < self.w && (r as usize) < self.h {
            let i = (r as usize * self.w + c as usize) * 3;
            for (dst, &c) in self.px[i..i + 3].iter_mut().zip(&color) {
                let old = *dst as f64;
                *dst = (old + (c as f64 - old) * alpha).round() as u8;
            }
        }
    }

    fn col(&self, x: f64) -> f64 {
        let m = self.margin as f64;
        m + (x - self.x.0) / (self.x.1 - self.x.0) * (self.w as f64 - 2.0 * m)
    }

    fn row(&self, y: f64) -> f64 {
        let m = self.margin as f64;
        self.h as f64 - m - (y - self.y.0) / (self.y.1 - self.y.0) * (self.h as f64 - 2.0 * m)
    }

    fn text(&mut self, s: &str, c: i64, r: i64) {
        for (k, ch) in s.chars().enumerate() {
            for (dy, bits) in glyph(ch).iter().enumerate() {
                for dx in 0..3 {
                    if bits >> (2 - dx) & 1 == 1 {
                        for (sx, sy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                            self.set(
                                c + k as i64 * 8 + dx * 2 + sx,
                                r + dy as i64 * 2 + sy,
                                [0; 3],
                            );
                        }
                    }
                }
            }
        }
    }

    fn axes(&mut self) {
        let (l, r) = (self.margin as i64, (self.w - self.margin) as i64);
        let (t, b) = (self.margin as i64, (self.h - self.margin) as i64);
        for c in l..=r {
            self.set(c, t, [0; 3]);
            self.set(c, b, [0; 3]);
        }
        for rr in t..=b {
            self.set(l, rr, [0; 3]);
            self.set(r, rr, [0; 3]);
        }
        for k in 0..=4 {
            let xv = self.x.0 + (self.x.1 - self.x.0) * k as f64 / 4.0;
            let c = self.col(xv) as i64;
            for d in 0..5 {
                self.set(c, b + d, [0; 3]);
            }
            let label = format!("{xv:.1}");
            self.text(&label, c - label.len() as i64 * 4, b + 8);
            let yv = self.y.0 + (self.y.1 - self.y.0) * k as f64 / 4.0;
            let rr = self.row(yv) as i64;
            for d in 0..5 {
                self.set(l - d, rr, [0; 3]);
            }
            let label = format!("{yv:.1}");
            self.text(&label, l - 8 - label.len() as i64 * 8, rr - 5);
        }
    }

    /// A polyline through `(xs, ys)`.
    pub fn line(&mut self, xs: &[f64], ys: &[f64], color: Rgb, alpha: f64) {
        for i in 1..xs.len() {
            let (c0, r0) = (self.col(xs[i - 1]), self.row(ys[i - 1]));
            let (c1, r1) = (self.col(xs[i]), self.row(ys[i]));
            let n = ((c1 - c0).abs().max((r1 - r0).abs()).ceil() as usize).max(1);
            for s in 0..=n {
                let f = s as f64 / n as f64;
                let (c, r) = (c0 + (c1 - c0) * f, r0 + (r1 - r0) * f);
                if r >= self.margin as f64 && r <= (self.h - self.margin) as f64 {
                    self.blend(c.round() as i64, r.round() as i64, color, alpha);
                    self.blend(c.round() as i64, r.round() as i64 + 1, color, alpha * 0.5);
                }
            }
        }
    }

    /// Shade between `lo` and `hi` over `xs`.
    pub fn band(&mut self, xs: &[f64], lo: &[f64], hi: &[f64], color: Rgb, alpha: f64) {
        for i in 1..xs.len() {
            let (c0, c1) = (self.col(xs[i - 1]) as i64, self.col(xs[i]) as i64);
            let last = if i + 1 == xs.len() { c1 + 1 } else { c1 };
            for c in c0..last {
                let f = if c1 == c0 {
                    0.0
                } else {
                    (c - c0) as f64 / (c1 - c0) as f64
                };
                let l = lo[i - 1] + (lo[i] - lo[i - 1]) * f;
                let h = hi[i - 1] + (hi[i] - hi[i - 1]) * f;
                let top = self.row(h).max(self.margin as f64) as i64;
                let bot = self.row(l).min((self.h - self.margin) as f64) as i64;
                for r in top..=bot {
                    self.blend(c, r, color, alpha);
                }
            }
        }
    }

    /// Filled dots at `(xs, ys)`.
    pub fn points(&mut self, xs: &[f64], ys: &[f64], color: Rgb) {
        for (&x, &y) in xs.iter().zip(ys) {
            let (c, r) = (self.col(x).round() as i64, self.row(y).round() as i64);
            for dc in -2i64..=2 {
                for dr in -2i64..=2 {
                    if dc * dc + dr * dr <= 5 {
                        self.set(c + dc, r + dr, color);
                    }
                }
            }
        }
    }

    /// Save as PNG.
    pub fn save(&self, path: &std::path::Path) -> std::io::Result<()> {
        super::png::save(path, self.w as u32, self.h as u32, &self.px)
    }
}
