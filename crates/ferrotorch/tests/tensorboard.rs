//! The Rust TensorBoard writer against events the `tensorboard` package
//! wrote (fixtures/tensorboard_events.bin, made by
//! fixtures/gen_tensorboard.py): the same summaries encode to the same
//! bytes, record framing and CRCs included.

use ferrotorch as torch;
use prost::Message;
use torch::utils::tensorboard::proto::{Event, Kind, Summary, What};
use torch::utils::tensorboard::{record, summary, SummaryWriter};
use torch::Tensor;

fn event(wall_time: f64, step: i64, s: Summary) -> Event {
    Event {
        wall_time,
        step,
        what: Some(What::Summary(s)),
        source_metadata: None,
    }
}

/// Split a TFRecord stream, checking each record's CRCs.
fn records(mut bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let len_crc = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
        assert_eq!(len_crc, record::masked_crc(&bytes[..8]));
        let data = &bytes[12..12 + len];
        let crc = u32::from_le_bytes(bytes[12 + len..16 + len].try_into().unwrap());
        assert_eq!(crc, record::masked_crc(data));
        out.push(data.to_vec());
        bytes = &bytes[16 + len..];
    }
    out
}

#[test]
fn summaries_encode_as_tensorboards_own() -> torch::Result<()> {
    let values = [-3.5, -0.1, 0.0, 0.0, 0.2, 1.7, 2.5, 1e-13, 250.0];
    let events = [
        event(1700000000.25, 3, summary::scalar("Loss/train", 0.125)),
        event(
            1700000001.5,
            4,
            summary::histogram(
                "weights",
                &Tensor::from_slice(&values),
                &summary::default_bins(),
            )?,
        ),
        event(
            1700000002.0,
            0,
            summary::text("notes", "a **Markdown** note é"),
        ),
    ];
    let mut ours = Vec::new();
    for e in &events {
        record::write_record(&mut ours, &e.encode_to_vec())?;
    }
    let theirs = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tensorboard_events.bin"
    ))?;
    // decoded first, for a readable failure; then byte for byte
    let decoded: Vec<Event> = records(&theirs)
        .iter()
        .map(|r| Event::decode(r.as_slice()).unwrap())
        .collect();
    assert_eq!(decoded, events);
    assert_eq!(ours, theirs);
    Ok(())
}

#[test]
fn a_writer_run_reads_back() -> torch::Result<()> {
    let dir = std::env::temp_dir().join(format!("ft-tb-{}", std::process::id()));
    let mut w = SummaryWriter::new(&dir)?;
    for step in 0..5 {
        w.add_scalar("loss", 1.0 / (1.0 + step as f64), step)?;
    }
    w.add_scalars("acc", &[("train", 0.5), ("val", 0.25)], 7)?;
    // a 2×3 RGB image: red, green, blue / black, white, grey
    let img = Tensor::from_slice(&[
        1.0f32, 0.0, 0.0, 0.0, 1.0, 0.5, //
        0.0, 1.0, 0.0, 0.0, 1.0, 0.5, //
        0.0, 0.0, 1.0, 0.0, 1.0, 0.5,
    ])
    .reshape(&[3, 2, 3])?;
    w.add_image("img", &img, 5)?;
    w.close()?;

    let files: Vec<_> = std::fs::read_dir(&dir)?
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    assert_eq!(files.len(), 1);
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("events.out.tfevents."), "{name}");
    let evs: Vec<Event> = records(&std::fs::read(&files[0])?)
        .iter()
        .map(|r| Event::decode(r.as_slice()).unwrap())
        .collect();
    assert_eq!(evs[0].what, Some(What::FileVersion("brain.Event:2".into())));
    let scalars: Vec<(i64, f32)> = evs
        .iter()
        .filter_map(|e| match &e.what {
            Some(What::Summary(s)) => match &s.value[0].value {
                Some(Kind::SimpleValue(v)) => Some((e.step, *v)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        scalars,
        vec![(0, 1.0), (1, 0.5), (2, 1.0 / 3.0), (3, 0.25), (4, 0.2)]
    );
    let Some(What::Summary(s)) = &evs.last().unwrap().what else {
        panic!("no image event")
    };
    let Some(Kind::Image(im)) = &s.value[0].value else {
        panic!("not an image")
    };
    assert_eq!((im.height, im.width, im.colorspace), (2, 3, 3));
    let decoder = png::Decoder::new(std::io::Cursor::new(&im.encoded_image_string));
    let mut reader = decoder.read_info().unwrap();
    let mut px = vec![0; reader.output_buffer_size()];
    reader.next_frame(&mut px).unwrap();
    assert_eq!(
        px,
        vec![255, 0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 127, 127, 127]
    );
    // add_scalars: one run directory per series
    for series in ["acc_train", "acc_val"] {
        assert_eq!(std::fs::read_dir(dir.join(series))?.count(), 1);
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn bad_input_is_an_error() {
    let empty = Tensor::from_slice::<f32>(&[]);
    let e = summary::histogram("h", &empty, &summary::default_bins()).unwrap_err();
    assert!(e.to_string().contains("no element"), "{e}");
    let e = summary::image("i", &torch::zeros(&[2, 4, 4], ()).unwrap()).unwrap_err();
    assert!(e.to_string().contains("1, 3 or 4 channels"), "{e}");
}
