//! TensorBoard's event messages (`tensorboard/compat/proto/event.proto`,
//! `summary.proto`, `tensor.proto`, `tensor_shape.proto`), the fields the
//! writer fills, with their numbers and wire types as in those files, so
//! that TensorBoard decodes what `prost` encodes (checked against events
//! written by the `tensorboard` package: `tests/tensorboard.rs`).

/// `tensorboard.Event`: one record of an event file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Event {
    #[prost(double, tag = "1")]
    pub wall_time: f64,
    #[prost(int64, tag = "2")]
    pub step: i64,
    #[prost(oneof = "What", tags = "3, 4, 5")]
    pub what: Option<What>,
    #[prost(message, optional, tag = "10")]
    pub source_metadata: Option<SourceMetadata>,
}

/// The `what` oneof of [`Event`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum What {
    /// The first event of a file: `brain.Event:2`.
    #[prost(string, tag = "3")]
    FileVersion(String),
    /// A serialized `GraphDef`.
    #[prost(bytes, tag = "4")]
    GraphDef(Vec<u8>),
    #[prost(message, tag = "5")]
    Summary(Summary),
}

/// `tensorboard.SourceMetadata`: which program wrote the file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SourceMetadata {
    #[prost(string, tag = "1")]
    pub writer: String,
}

/// `tensorboard.Summary`: values written at one step.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Summary {
    #[prost(message, repeated, tag = "1")]
    pub value: Vec<Value>,
}

/// `tensorboard.Summary.Value`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Value {
    #[prost(string, tag = "1")]
    pub tag: String,
    #[prost(message, optional, tag = "9")]
    pub metadata: Option<SummaryMetadata>,
    #[prost(oneof = "Kind", tags = "2, 4, 5, 8")]
    pub value: Option<Kind>,
}

/// The `value` oneof of [`Value`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Kind {
    #[prost(float, tag = "2")]
    SimpleValue(f32),
    #[prost(message, tag = "4")]
    Image(Image),
    #[prost(message, tag = "5")]
    Histo(HistogramProto),
    #[prost(message, tag = "8")]
    Tensor(TensorProto),
}

/// `tensorboard.Summary.Image`: an encoded (PNG) image.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Image {
    #[prost(int32, tag = "1")]
    pub height: i32,
    #[prost(int32, tag = "2")]
    pub width: i32,
    #[prost(int32, tag = "3")]
    pub colorspace: i32,
    #[prost(bytes, tag = "4")]
    pub encoded_image_string: Vec<u8>,
}

/// `tensorboard.HistogramProto`: bucket `i` counts the values up to
/// `bucket_limit[i]` above the previous limit.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HistogramProto {
    #[prost(double, tag = "1")]
    pub min: f64,
    #[prost(double, tag = "2")]
    pub max: f64,
    #[prost(double, tag = "3")]
    pub num: f64,
    #[prost(double, tag = "4")]
    pub sum: f64,
    #[prost(double, tag = "5")]
    pub sum_squares: f64,
    #[prost(double, repeated, tag = "6")]
    pub bucket_limit: Vec<f64>,
    #[prost(double, repeated, tag = "7")]
    pub bucket: Vec<f64>,
}

/// `tensorboard.SummaryMetadata`: which plugin shows a value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SummaryMetadata {
    #[prost(message, optional, tag = "1")]
    pub plugin_data: Option<PluginData>,
}

/// `tensorboard.SummaryMetadata.PluginData`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PluginData {
    #[prost(string, tag = "1")]
    pub plugin_name: String,
    #[prost(bytes, tag = "2")]
    pub content: Vec<u8>,
}

/// `tensorboard.TensorProto`, the fields for strings and floats.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    /// `tensorboard.DataType`: 1 float, 2 double, 7 string.
    #[prost(int32, tag = "1")]
    pub dtype: i32,
    #[prost(message, optional, tag = "2")]
    pub tensor_shape: Option<TensorShapeProto>,
    #[prost(float, repeated, tag = "5")]
    pub float_val: Vec<f32>,
    #[prost(double, repeated, tag = "6")]
    pub double_val: Vec<f64>,
    #[prost(bytes, repeated, tag = "8")]
    pub string_val: Vec<Vec<u8>>,
}

/// `tensorboard.TensorShapeProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    #[prost(message, repeated, tag = "2")]
    pub dim: Vec<Dim>,
}

/// `tensorboard.TensorShapeProto.Dim`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dim {
    #[prost(int64, tag = "1")]
    pub size: i64,
}

/// `tensorboard.TextPluginData`: the text plugin's metadata content.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TextPluginData {
    #[prost(int32, tag = "1")]
    pub version: i32,
}

/// `tensorboard.DataType` values used here.
pub const DT_FLOAT: i32 = 1;
/// `DT_DOUBLE`.
pub const DT_DOUBLE: i32 = 2;
/// `DT_STRING`.
pub const DT_STRING: i32 = 7;
