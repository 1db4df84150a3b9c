//! Summaries of each kind of value, as `torch.utils.tensorboard.summary`
//! builds them (same tags, plugins and histogram buckets).

use super::proto::{
    Dim, HistogramProto, Image, Kind, PluginData, Summary, SummaryMetadata, TensorProto,
    TensorShapeProto, TextPluginData, Value, DT_STRING,
};
use crate::{DType, Result, Tensor};
use prost::Message;

fn one(tag: &str, metadata: Option<SummaryMetadata>, kind: Kind) -> Summary {
    Summary {
        value: vec![Value {
            tag: tag.to_string(),
            metadata,
            value: Some(kind),
        }],
    }
}

/// One number (`simple_value`, a float32 as TensorBoard keeps it).
pub fn scalar(tag: &str, value: f64) -> Summary {
    one(tag, None, Kind::SimpleValue(value as f32))
}

/// TensorFlow's default histogram buckets, which torch's `add_histogram`
/// uses (`bins="tensorflow"`): ±1e-12·1.1^k below 1e20, and 0, ascending.
pub fn default_bins() -> Vec<f64> {
    let mut pos = Vec::new();
    let mut v = 1e-12f64;
    while v < 1e20 {
        pos.push(v);
        v *= 1.1;
    }
    let mut edges: Vec<f64> = pos.iter().rev().map(|v| -v).collect();
    edges.push(0.0);
    edges.extend(pos);
    edges
}

/// Counts of `values` over ascending `edges` as `numpy.histogram`: bin
/// `i` holds `edges[i] <= v < edges[i + 1]`, the last bin its right edge
/// too; values outside are not counted.
fn counts(values: &[f64], edges: &[f64]) -> Vec<f64> {
    let mut c = vec![0.0; edges.len() - 1];
    let last = edges.len() - 1;
    for &v in values {
        if !(v >= edges[0] && v <= edges[last]) {
            continue;
        }
        let i = edges.partition_point(|&e| e <= v);
        c[(i - 1).min(last - 1)] += 1.0;
    }
    c
}

/// A histogram of `values` over ascending bin `edges` (see
/// [`default_bins`]), trimmed to the buckets that hold values, with one
/// empty bucket on their left (TensorBoard keeps only right limits).
pub fn histogram(tag: &str, values: &Tensor, edges: &[f64]) -> Result<Summary> {
    let v = values.reshape(&[-1])?.to_vec_f64()?;
    ferrotorch_core::ensure!(
        !v.is_empty(),
        Value,
        "add_histogram: the input has no element"
    );
    ferrotorch_core::ensure!(
        edges.len() >= 2 && edges.windows(2).all(|w| w[0] < w[1]),
        Value,
        "add_histogram: bins must be at least two increasing edges"
    );
    let c = counts(&v, edges);
    let filled: Vec<usize> = (0..c.len()).filter(|&i| c[i] > 0.0).collect();
    ferrotorch_core::ensure!(
        !filled.is_empty(),
        Value,
        "add_histogram: no value of '{tag}' falls within the bins (NaN or out of range)"
    );
    let (first, last) = (filled[0], filled[filled.len() - 1] + 1);
    let bucket = if first > 0 {
        c[first - 1..last].to_vec()
    } else {
        std::iter::once(0.0)
            .chain(c[..last].iter().copied())
            .collect()
    };
    let histo = HistogramProto {
        min: v.iter().copied().fold(f64::INFINITY, f64::min),
        max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        num: v.len() as f64,
        sum: v.iter().sum(),
        sum_squares: v.iter().map(|x| x * x).sum(),
        bucket_limit: edges[first..=last].to_vec(),
        bucket,
    };
    Ok(one(tag, None, Kind::Histo(histo)))
}

/// An image from a `CHW` tensor (1, 3 or 4 channels; float in [0, 1] or
/// uint8 in [0, 255], clipped), PNG-encoded.
pub fn image(tag: &str, chw: &Tensor) -> Result<Summary> {
    let shape = chw.shape().to_vec();
    ferrotorch_core::ensure!(
        shape.len() == 3 && matches!(shape[0], 1 | 3 | 4),
        Value,
        "add_image: expected a CHW image with 1, 3 or 4 channels, got shape {shape:?}"
    );
    let (c, h, w) = (shape[0], shape[1], shape[2]);
    let scale = if chw.dtype() == DType::U8 { 1.0 } else { 255.0 };
    let hwc = chw.permute(&[1, 2, 0])?.reshape(&[-1])?.to_vec_f64()?;
    let mut px: Vec<u8> = hwc
        .iter()
        .map(|v| (v * scale).clamp(0.0, 255.0) as u8)
        .collect();
    // grey images are written as RGB, as torch's
    let channels = if c == 1 {
        px = px.iter().flat_map(|&g| [g, g, g]).collect();
        3
    } else {
        c
    };
    let mut png_bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut png_bytes, w as u32, h as u32);
        enc.set_color(if channels == 4 {
            png::ColorType::Rgba
        } else {
            png::ColorType::Rgb
        });
        enc.set_depth(png::BitDepth::Eight);
        let err = |e: png::EncodingError| {
            crate::Error::new(crate::ErrorKind::Runtime, format!("add_image: {e}"))
        };
        let mut writer = enc.write_header().map_err(err)?;
        writer.write_image_data(&px).map_err(err)?;
    }
    let img = Image {
        height: h as i32,
        width: w as i32,
        colorspace: channels as i32,
        encoded_image_string: png_bytes,
    };
    Ok(one(tag, None, Kind::Image(img)))
}

/// Text (Markdown) for the text plugin, under `<tag>/text_summary`.
pub fn text(tag: &str, text: &str) -> Summary {
    let meta = SummaryMetadata {
        plugin_data: Some(PluginData {
            plugin_name: "text".into(),
            content: TextPluginData { version: 0 }.encode_to_vec(),
        }),
    };
    let tensor = TensorProto {
        dtype: DT_STRING,
        tensor_shape: Some(TensorShapeProto {
            dim: vec![Dim { size: 1 }],
        }),
        string_val: vec![text.as_bytes().to_vec()],
        ..Default::default()
    };
    one(
        &format!("{tag}/text_summary"),
        Some(meta),
        Kind::Tensor(tensor),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_numpy_histogram() {
        let edges = [0.0, 1.0, 2.0, 3.0];
        // numpy.histogram([-1, 0, 0.5, 1, 2.5, 3, 4], [0, 1, 2, 3]) -> [2, 1, 2]
        assert_eq!(
            counts(&[-1.0, 0.0, 0.5, 1.0, 2.5, 3.0, 4.0], &edges),
            vec![2.0, 1.0, 2.0]
        );
        assert_eq!(counts(&[f64::NAN], &edges), vec![0.0, 0.0, 0.0]);
    }
}
