//! `torch.utils.tensorboard`: a [`SummaryWriter`] that writes TensorBoard's
//! event files (TFRecord framing of `tensorboard.Event` protocol buffers)
//! from Rust, with torch's method names. Feature `tensorboard`.
//!
//! ```no_run
//! use ferrotorch as torch;
//! use torch::utils::tensorboard::SummaryWriter;
//!
//! # fn main() -> torch::Result<()> {
//! let mut writer = SummaryWriter::new("runs/mlp")?;
//! for step in 0..100 {
//!     let loss = 1.0 / (1.0 + step as f64);
//!     writer.add_scalar("Loss/train", loss, step)?;
//! }
//! writer.add_histogram("weights", &torch::randn(&[1000], ())?, 99)?;
//! writer.add_text("notes", "a **Markdown** note", 0)?;
//! writer.close()?;
//! # Ok(())
//! # }
//! ```
//!
//! Then `tensorboard --logdir runs` shows them. Events are buffered and
//! written on [`SummaryWriter::flush`], [`SummaryWriter::close`] or drop
//! (torch's writer flushes from a thread every `flush_secs`; here nothing
//! runs in the background).

pub mod proto;
pub mod record;
pub mod summary;

use crate::{Result, Tensor};
use prost::Message;
use proto::{Event, SourceMetadata, Summary, What};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length; gethostname
    // writes at most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// One event file: `events.out.tfevents.<time>.<host>.<pid>.<n><suffix>`
/// in a directory, opened with its `brain.Event:2` header event.
pub struct FileWriter {
    dir: PathBuf,
    path: PathBuf,
    out: BufWriter<File>,
}

impl FileWriter {
    /// Create `dir` if needed and a new event file in it.
    pub fn new(dir: impl AsRef<Path>, filename_suffix: &str) -> Result<FileWriter> {
        static UID: AtomicUsize = AtomicUsize::new(0);
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir)?;
        let name = format!(
            "events.out.tfevents.{:010}.{}.{}.{}{filename_suffix}",
            now() as u64,
            hostname(),
            std::process::id(),
            UID.fetch_add(1, Ordering::Relaxed)
        );
        let path = dir.join(name);
        let mut w = FileWriter {
            out: BufWriter::new(File::create(&path)?),
            dir,
            path,
        };
        w.add_event(Event {
            wall_time: now(),
            step: 0,
            what: Some(What::FileVersion("brain.Event:2".into())),
            source_metadata: Some(SourceMetadata {
                writer: "ferrotorch".into(),
            }),
        })?;
        w.flush()?;
        Ok(w)
    }

    /// The directory the file is in.
    pub fn get_logdir(&self) -> &Path {
        &self.dir
    }

    /// The event file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one event.
    pub fn add_event(&mut self, event: Event) -> Result<()> {
        record::write_record(&mut self.out, &event.encode_to_vec())?;
        Ok(())
    }

    /// Append a summary at `step`, stamped `walltime` (now if `None`).
    pub fn add_summary(
        &mut self,
        summary: Summary,
        step: i64,
        walltime: Option<f64>,
    ) -> Result<()> {
        self.add_event(Event {
            wall_time: walltime.unwrap_or_else(now),
            step,
            what: Some(What::Summary(summary)),
            source_metadata: None,
        })
    }

    /// Write what is buffered to the file.
    pub fn flush(&mut self) -> Result<()> {
        self.out.flush()?;
        Ok(())
    }
}

/// Writes scalars, histograms, images and text for TensorBoard, as
/// `torch.utils.tensorboard.SummaryWriter`.
pub struct SummaryWriter {
    log_dir: PathBuf,
    main: FileWriter,
    /// `add_scalars`'s writers, one run directory per series.
    others: BTreeMap<PathBuf, FileWriter>,
    default_bins: Vec<f64>,
}

impl SummaryWriter {
    /// A writer of a new event file in `log_dir` (created if needed).
    pub fn new(log_dir: impl AsRef<Path>) -> Result<SummaryWriter> {
        let log_dir = log_dir.as_ref().to_path_buf();
        Ok(SummaryWriter {
            main: FileWriter::new(&log_dir, "")?,
            log_dir,
            others: BTreeMap::new(),
            default_bins: summary::default_bins(),
        })
    }

    /// A writer in torch's default directory,
    /// `runs/<seconds since the epoch>_<host><comment>` (torch formats the
    /// local date; this names runs by a sortable time stamp instead).
    pub fn with_comment(comment: &str) -> Result<SummaryWriter> {
        let dir = Path::new("runs").join(format!("{}_{}{comment}", now() as u64, hostname()));
        SummaryWriter::new(dir)
    }

    /// The directory the event files are written to.
    pub fn get_logdir(&self) -> &Path {
        &self.log_dir
    }

    /// The main event file's writer, for summaries built with
    /// [`summary`] (and a chosen wall time).
    pub fn file_writer(&mut self) -> &mut FileWriter {
        &mut self.main
    }

    /// One value of the series `tag` at `global_step`.
    pub fn add_scalar(&mut self, tag: &str, value: f64, global_step: i64) -> Result<()> {
        self.main
            .add_summary(summary::scalar(tag, value), global_step, None)
    }

    /// Several series in one chart: each written to its own run directory
    /// `<log_dir>/<main_tag>_<tag>` under the tag `main_tag`, as torch's.
    pub fn add_scalars(
        &mut self,
        main_tag: &str,
        values: &[(&str, f64)],
        global_step: i64,
    ) -> Result<()> {
        let walltime = now();
        for (tag, value) in values {
            let dir = self
                .log_dir
                .join(format!("{}_{tag}", main_tag.replace('/', "_")));
            if !self.others.contains_key(&dir) {
                let w = FileWriter::new(&dir, "")?;
                self.others.insert(dir.clone(), w);
            }
            if let Some(w) = self.others.get_mut(&dir) {
                w.add_summary(
                    summary::scalar(main_tag, *value),
                    global_step,
                    Some(walltime),
                )?;
            }
        }
        Ok(())
    }

    /// A histogram of `values` over TensorFlow's default buckets (torch's
    /// `bins="tensorflow"`); [`summary::histogram`] takes other edges.
    pub fn add_histogram(&mut self, tag: &str, values: &Tensor, global_step: i64) -> Result<()> {
        let s = summary::histogram(tag, values, &self.default_bins)?;
        self.main.add_summary(s, global_step, None)
    }

    /// An image from a `CHW` tensor (float in [0, 1] or uint8).
    pub fn add_image(&mut self, tag: &str, img: &Tensor, global_step: i64) -> Result<()> {
        let s = summary::image(tag, img)?;
        self.main.add_summary(s, global_step, None)
    }

    /// Text (Markdown).
    pub fn add_text(&mut self, tag: &str, text: &str, global_step: i64) -> Result<()> {
        self.main
            .add_summary(summary::text(tag, text), global_step, None)
    }

    /// Write every pending event to disk.
    pub fn flush(&mut self) -> Result<()> {
        self.main.flush()?;
        self.others.values_mut().try_for_each(FileWriter::flush)
    }

    /// Flush and close the event files.
    pub fn close(mut self) -> Result<()> {
        self.flush()
    }
}

impl Drop for SummaryWriter {
    fn drop(&mut self) {
        // an error here has nowhere to go; close() reports it
        let _ = self.flush();
    }
}
