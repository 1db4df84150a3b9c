//! The example's figures, drawn with `plotters`: a title, named axes, a
//! legend, and compressed PNGs. The font (DejaVu Sans, from the `dejavu`
//! crate) is compiled in, so no system font or fontconfig is needed.

use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

/// One thing drawn on a figure, with its legend entry.
pub enum Layer<'a> {
    /// Scatter points.
    Points {
        label: &'a str,
        xs: &'a [f64],
        ys: &'a [f64],
        color: RGBColor,
    },
    /// A shaded band between `lo` and `hi`.
    Band {
        label: &'a str,
        xs: &'a [f64],
        lo: &'a [f64],
        hi: &'a [f64],
        color: RGBColor,
    },
    /// Several polylines over the same `xs`, one legend entry for all.
    Lines {
        label: &'a str,
        xs: &'a [f64],
        ys: Vec<Vec<f64>>,
        color: RGBColor,
        opacity: f64,
        width: u32,
    },
}

/// A titled figure with named axes over fixed ranges.
pub struct Figure<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub x: (f64, f64),
    pub y: (f64, f64),
    pub layers: Vec<Layer<'a>>,
}

/// Figure size in pixels.
pub const SIZE: (u32, u32) = (800, 500);

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // DejaVu Sans is a valid TrueType font; registration cannot fail
        // on it, and if it ever did the draw below reports the font as
        // unavailable instead of panicking.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

fn plot_error(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("drawing a figure: {e}"))
}

impl Figure<'_> {
    /// Draw onto any plotters backend.
    pub fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> std::io::Result<()> {
        register_font();
        root.fill(&WHITE).map_err(plot_error)?;
        let mut chart = ChartBuilder::on(root)
            .caption(
                self.title,
                ("sans-serif", 24).into_font().style(FontStyle::Bold),
            )
            .margin(14)
            .x_label_area_size(46)
            .y_label_area_size(56)
            .build_cartesian_2d(self.x.0..self.x.1, self.y.0..self.y.1)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_desc(self.x_label)
            .y_desc(self.y_label)
            .axis_desc_style(("sans-serif", 18))
            .label_style(("sans-serif", 14))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .draw()
            .map_err(plot_error)?;
        for layer in &self.layers {
            match layer {
                Layer::Points {
                    label,
                    xs,
                    ys,
                    color,
                } => {
                    let style = color.filled();
                    chart
                        .draw_series(
                            xs.iter()
                                .zip(ys.iter())
                                .map(|(&x, &y)| Circle::new((x, y), 3, style)),
                        )
                        .map_err(plot_error)?
                        .label(*label)
                        .legend(move |(x, y)| Circle::new((x + 10, y), 3, style));
                }
                Layer::Band {
                    label,
                    xs,
                    lo,
                    hi,
                    color,
                } => {
                    let style = color.mix(0.3).filled();
                    let outline: Vec<(f64, f64)> = xs
                        .iter()
                        .zip(hi.iter())
                        .chain(xs.iter().zip(lo.iter()).rev())
                        .map(|(&x, &y)| (x, y))
                        .collect();
                    chart
                        .draw_series(std::iter::once(Polygon::new(outline, style)))
                        .map_err(plot_error)?
                        .label(*label)
                        .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 20, y + 6)], style));
                }
                Layer::Lines {
                    label,
                    xs,
                    ys,
                    color,
                    opacity,
                    width,
                } => {
                    let style = color.mix(*opacity).stroke_width(*width);
                    for (k, y) in ys.iter().enumerate() {
                        let drawn = chart
                            .draw_series(LineSeries::new(
                                xs.iter().zip(y.iter()).map(|(&x, &y)| (x, y)),
                                style,
                            ))
                            .map_err(plot_error)?;
                        if k == 0 {
                            // the legend shows the colour at full strength
                            let key = color.stroke_width(2);
                            drawn.label(*label).legend(move |(x, y)| {
                                PathElement::new(vec![(x, y), (x + 20, y)], key)
                            });
                        }
                    }
                }
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font(("sans-serif", 15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(plot_error)?;
        root.present().map_err(plot_error)
    }

    /// Render to a PNG file, at the png crate's best compression with
    /// adaptive row filters.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let px = self.render()?;
        let file = std::io::BufWriter::new(std::fs::File::create(path)?);
        let mut enc = png::Encoder::new(file, SIZE.0, SIZE.1);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Best);
        enc.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
        let mut w = enc.write_header().map_err(plot_error)?;
        w.write_image_data(&px).map_err(plot_error)?;
        w.finish().map_err(plot_error)
    }

    /// Render into an RGB buffer of `SIZE`.
    pub fn render(&self) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut buf, SIZE).into_drawing_area();
            self.draw(&root)?;
        }
        Ok(buf)
    }
}

/// An `index.html` beside the figures: each one with a sentence saying
/// what it shows.
pub fn write_index(dir: &Path, entries: &[(String, String, String)]) -> std::io::Result<()> {
    let mut html = String::from(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\">\
         <title>Randomized prior functions</title>\n<style>body{font-family:sans-serif;\
         max-width:860px;margin:2em auto}figure{margin:2em 0}img{max-width:100%}</style>\
         </head><body>\n<h1>Randomized prior functions</h1>\n<p>Ensembles of small MLPs, \
         each trained on a bootstrap resample of the data and added to a fixed random prior \
         network (Osband et al., 2018). Where there is data the members agree; away from it \
         they follow their priors and the band widens.</p>\n",
    );
    for (file, title, sentence) in entries {
        html.push_str(&format!(
            "<figure><img src=\"{file}\" alt=\"{title}\"><figcaption><b>{title}.</b> \
             {sentence}</figcaption></figure>\n"
        ));
    }
    html.push_str("</body></html>\n");
    std::fs::write(dir.join("index.html"), html)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure<'a>(xs: &'a [f64], ys: &'a [f64], lo: &'a [f64], hi: &'a [f64]) -> Figure<'a> {
        Figure {
            title: "Ensemble with MLP priors",
            x_label: "x",
            y_label: "y",
            x: (-2.0, 2.0),
            y: (-3.0, 3.0),
            layers: vec![
                Layer::Band {
                    label: "mean ± 2σ",
                    xs,
                    lo,
                    hi,
                    color: RGBColor(90, 140, 230),
                },
                Layer::Lines {
                    label: "ensemble mean",
                    xs,
                    ys: vec![ys.to_vec()],
                    color: RGBColor(20, 60, 200),
                    opacity: 1.0,
                    width: 2,
                },
                // fifty translucent curves, as the members' and priors'
                // figures draw (the largest PNGs)
                Layer::Lines {
                    label: "members",
                    xs,
                    ys: (0..50)
                        .map(|k| {
                            xs.iter()
                                .map(|x| {
                                    (3.0 * x + k as f64 * 0.13).sin() * (1.0 + 0.02 * k as f64)
                                })
                                .collect()
                        })
                        .collect(),
                    color: RGBColor(30, 140, 60),
                    opacity: 0.4,
                    width: 1,
                },
                Layer::Points {
                    label: "data",
                    xs,
                    ys,
                    color: RGBColor(220, 40, 40),
                },
            ],
        }
    }

    #[test]
    fn a_figure_has_a_title_and_a_small_png() {
        let xs: Vec<f64> = (0..200).map(|i| -2.0 + 4.0 * i as f64 / 199.0).collect();
        let ys: Vec<f64> = xs.iter().map(|x| (3.0 * x).sin()).collect();
        let lo: Vec<f64> = ys.iter().map(|y| y - 0.5).collect();
        let hi: Vec<f64> = ys.iter().map(|y| y + 0.5).collect();
        let fig = figure(&xs, &ys, &lo, &hi);

        let px = fig.render().unwrap();
        let (w, h) = (SIZE.0 as usize, SIZE.1 as usize);
        let dark = |r0: usize, r1: usize, c0: usize, c1: usize| {
            (r0..r1)
                .flat_map(|r| (c0..c1).map(move |c| (r, c)))
                .filter(|&(r, c)| px[(r * w + c) * 3..][..3].iter().all(|&v| v < 100))
                .count()
        };
        // The title is centred in the top band: dark glyph pixels there,
        // none in the same band's far corners.
        let title = dark(0, 40, w / 4, 3 * w / 4);
        assert!(title > 300, "{title} dark pixels in the title area");
        assert_eq!(dark(0, 30, 0, 60) + dark(0, 30, w - 60, w), 0);
        // The x axis name sits below the tick labels, centred.
        assert!(dark(h - 38, h, w / 2 - 30, w / 2 + 30) > 10);
        // The legend's box is in the plot's upper left, with text in it.
        assert!(dark(60, 160, 60, 260) > 200);

        let dir = std::env::temp_dir().join(format!("rpf-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("figure.png");
        fig.save(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: width and height, big-endian, after the signature and chunk header
        assert_eq!(
            u32::from_be_bytes(bytes[16..20].try_into().unwrap()),
            SIZE.0
        );
        assert_eq!(
            u32::from_be_bytes(bytes[20..24].try_into().unwrap()),
            SIZE.1
        );
        assert!(bytes.len() < 200_000, "{} bytes", bytes.len());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
