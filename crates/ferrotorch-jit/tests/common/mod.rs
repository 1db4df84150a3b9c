//! Helpers shared by the saved-program tests: a saved archive's entries
//! edited and written again.

#![allow(dead_code)]

use ferrotorch_jit::zip;
use serde_json::Value as Json;

pub const GRAPH: &str = "archive/graph.json";

/// A saved archive's entries, to edit.
pub fn entries(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    zip::entries(bytes)
        .unwrap()
        .into_iter()
        .map(|(n, d)| (n, d.to_vec()))
        .collect()
}

pub fn rebuild(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let refs: Vec<(&str, &[u8])> = entries
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    zip::write(&refs).unwrap()
}

/// The file with `graph.json`'s head (format, version) and graph edited.
pub fn with(bytes: &[u8], edit: impl FnOnce(&mut Json, &mut Json)) -> Vec<u8> {
    let mut es = entries(bytes);
    let e = es.iter_mut().find(|(n, _)| n == GRAPH).unwrap();
    let mut head: Json = serde_json::from_slice(&e.1).unwrap();
    let mut g = head["graph"].take();
    edit(&mut head, &mut g);
    head["graph"] = g;
    e.1 = head.to_string().into_bytes();
    rebuild(&es)
}
