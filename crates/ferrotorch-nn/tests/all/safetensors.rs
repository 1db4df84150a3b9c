//! Safetensors against the reference implementation: files written by
//! `safetensors.torch` (fixtures/gen_safetensors.py) load into the same
//! model here and reproduce PyTorch's output; what we save is
//! byte-identical to what it saves; saves are atomic; and every kind of
//! corrupt file is an error.

use crate::common::{assert_close, float32, load, rng_lock};
use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_nn::safetensors as st;
use ferrotorch_nn::{self as nn, Forward, Module, StateDict};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn model() -> Result<nn::Sequential> {
    Ok(nn::Sequential::new()
        .append(nn::Linear::new(3, 4, true)?)
        .append(nn::BatchNorm1d::new(4, Default::default())?)
        .append(nn::ReLU::new())
        .append(nn::Linear::new(4, 2, true)?))
}

fn meta() -> BTreeMap<String, String> {
    BTreeMap::from([("format".to_string(), "pt".to_string())])
}

#[test]
fn pytorch_state_dict_loads_and_reproduces_the_output() -> Result<()> {
    let fx = load("safetensors.json");
    let bytes = fixture("torch_state.safetensors");
    let sd = st::load(&bytes)?;
    assert_eq!(st::metadata(&bytes)?, meta());
    let m = {
        let _rng = rng_lock();
        model()?
    };
    m.load_state_dict(&sd, true)?;
    m.eval();
    assert_close(
        "eval output",
        &m.call(&float32(&fx["x"]))?,
        &fx["y"],
        1e-6,
        1e-5,
    );
    // Saving the same state dict gives the reference implementation's bytes.
    assert_eq!(st::save(&m.state_dict(), Some(&meta()))?, bytes);
    Ok(())
}

#[test]
fn every_dtype_round_trips_byte_for_byte() -> Result<()> {
    let fx = load("safetensors.json");
    let bytes = fixture("dtypes.safetensors");
    let sd = st::load(&bytes)?;
    for (name, expected) in fx["dtypes"].as_object().unwrap() {
        let t = sd.get(name).unwrap();
        assert_close(name, t, expected, 0.0, 0.0);
    }
    assert_eq!(sd.get("bool").unwrap().dtype(), DType::Bool);
    assert_eq!(sd.get("bf16").unwrap().dtype(), DType::BF16);
    assert_eq!(st::save(&sd, None)?, bytes);
    // written into a caller's buffer: the same bytes; a buffer of the
    // wrong size is an error, not a short or overlong write
    let file = st::encode(&sd, None)?;
    assert_eq!(file.len(), bytes.len());
    let mut buf = vec![0u8; file.len()];
    file.write_into(&mut buf)?;
    assert_eq!(buf, bytes);
    let e = file.write_into(&mut buf[1..]).unwrap_err().to_string();
    assert!(e.contains("a buffer of"), "{e}");
    // a non-contiguous tensor is written in row-major order
    let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?.t()?;
    let mut out = vec![0u8; 24];
    t.write_bytes(&mut out)?;
    assert_eq!(out, t.contiguous()?.to_bytes()?);
    Ok(())
}

#[test]
fn complex64_round_trips_and_complex128_is_refused() -> Result<()> {
    // safetensors' C64 holds (re, im) float32 pairs; it has no complex128
    let z = Tensor::from_vec(vec![1.0f32, -2.0, 0.5, 3.0], &[2, 2])?.view_as_complex()?;
    let mut sd = StateDict::new();
    sd.insert("z".to_string(), z.clone());
    let bytes = st::save(&sd, None)?;
    let header = String::from_utf8_lossy(&bytes[8..]).to_string();
    assert!(header.contains(r#""dtype":"C64""#), "{header}");
    let back = st::load(&bytes)?;
    let b = back.get("z").unwrap();
    assert_eq!(b.dtype(), DType::C64);
    assert_eq!(
        b.view_as_real()?.to_vec::<f32>()?,
        vec![1.0, -2.0, 0.5, 3.0]
    );
    sd.insert("w".to_string(), z.to_dtype(DType::C128)?);
    let e = st::save(&sd, None).unwrap_err().to_string();
    assert!(e.contains("complex128"), "{e}");
    Ok(())
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ferrotorch-st-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn saves_are_atomic() -> Result<()> {
    let dir = temp_dir("atomic");
    let path = dir.join("model.safetensors");
    let m = {
        let _rng = rng_lock();
        model()?
    };
    st::save_file(&m.state_dict(), &path, None)?;
    let before = std::fs::read(&path).unwrap();
    let back = st::load_file(&path)?;
    assert_eq!(back.len(), m.state_dict().len());
    // A save that fails leaves the old file as it was, and no temporary.
    let mut bad = nn::StateDict::new();
    bad.insert("__metadata__", Tensor::zeros(&[1], ())?);
    assert!(st::save_file(&bad, &path, None).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let target_is_dir = dir.join("sub");
    std::fs::create_dir(&target_is_dir).unwrap();
    let e = st::save_file(&m.state_dict(), &target_is_dir, None).unwrap_err();
    assert!(e.to_string().starts_with("safetensors: "));
    assert!(target_is_dir.is_dir());
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
    let e = st::load_file(dir.join("missing.safetensors")).unwrap_err();
    assert!(e.to_string().contains("missing.safetensors"));
    std::fs::remove_dir_all(&dir).unwrap();
    Ok(())
}

/// Replace the header of `bytes` with `header` (keeping the data).
fn with_header(bytes: &[u8], header: &str) -> Vec<u8> {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend(header.as_bytes());
    out.extend(&bytes[8 + n..]);
    out
}

#[test]
fn corrupt_files_are_errors() {
    let mut sd = nn::StateDict::new();
    sd.insert("a", Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap());
    sd.insert("b", Tensor::from_vec(vec![true, false], &[2]).unwrap());
    let good = st::save(&sd, None).unwrap();
    assert_eq!(st::load(&good).unwrap().len(), 2);
    let err = |bytes: &[u8]| {
        st::load(bytes)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(err(&good[..5]).contains("too short"));
    assert!(err(&good[..good.len() - 1]).contains("cover 10 bytes but the data section has 9"));
    let mut huge = good.clone();
    huge[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(err(&huge).contains("does not fit"));
    let a = r#""a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}"#;
    let cases = [
        (
            format!(r#"{{{a},"b":{{"dtype":"BOOL","shape":[2],"data_offsets":[4,6]}}}}"#),
            "overlapping or missing",
        ),
        (
            format!(r#"{{{a},"b":{{"dtype":"BOOL","shape":[2],"data_offsets":[9,11]}}}}"#),
            "overlapping or missing",
        ),
        (
            format!(r#"{{{a},"b":{{"dtype":"BOOL","shape":[3],"data_offsets":[8,10]}}}}"#),
            "needs 3 bytes",
        ),
        (
            format!(r#"{{{a},"b":{{"dtype":"U16","shape":[2],"data_offsets":[8,10]}}}}"#),
            "unsupported dtype",
        ),
        (
            format!(r#"{{{a},"b":{{"dtype":"BOOL","shape":[-2],"data_offsets":[8,10]}}}}"#),
            "non-negative",
        ),
        (
            format!(r#"{{{a},"b":{{"dtype":"BOOL","shape":[2],"data_offsets":[10,8]}}}}"#),
            "run backwards",
        ),
        (
            format!(r#"{{{a},"b":{{"dtype":"BOOL","shape":[2]}}}}"#),
            "missing data_offsets",
        ),
        (
            format!(
                r#"{{{a},"b":{{"dtype":"BOOL","shape":[4611686018427387904, 4],"data_offsets":[8,10]}}}}"#
            ),
            "overflows",
        ),
        (format!(r#"{{{a}"#), "invalid header JSON"),
        ("[1, 2]".to_string(), "not a JSON object"),
        (
            format!(r#"{{"__metadata__":{{"k":1}},{a}}}"#),
            "__metadata__",
        ),
    ];
    for (header, want) in cases {
        let e = err(&with_header(&good, &header));
        assert!(e.contains(want), "{header}: {e}");
    }
    // Bool bytes other than 0/1 would be undefined behaviour: an error.
    let mut bad_bool = good.clone();
    let last = bad_bool.len() - 1;
    bad_bool[last] = 7;
    assert!(err(&bad_bool).contains("must be 0 or 1"));
}
