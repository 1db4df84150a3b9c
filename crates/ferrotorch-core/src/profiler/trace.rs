//! Chrome's trace event format (`chrome://tracing`, Perfetto): complete
//! (`"ph": "X"`) events with microsecond times.

use super::{Event, EventKind};
use std::fmt::Write;

fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

pub(super) fn chrome_trace(events: &[Event]) -> String {
    let pid = std::process::id();
    let mut out = String::from("{\n  \"traceEvents\": [");
    for (i, e) in events.iter().enumerate() {
        out.push_str(if i == 0 { "\n    {" } else { ",\n    {" });
        let cat = match e.kind {
            EventKind::Op => "cpu_op",
            EventKind::UserAnnotation => "user_annotation",
            EventKind::Backward => "cpu_op",
        };
        let _ = write!(out, "\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": ");
        json_string(&e.name, &mut out);
        let _ = write!(
            out,
            ", \"pid\": {pid}, \"tid\": {}, \"ts\": {:.3}, \"dur\": {:.3}",
            e.thread,
            e.start_us,
            e.duration_us()
        );
        if !e.input_shapes.is_empty() {
            let _ = write!(out, ", \"args\": {{\"Input Dims\": {:?}}}", e.input_shapes);
        }
        out.push('}');
    }
    out.push_str("\n  ],\n  \"displayTimeUnit\": \"ms\"\n}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_complete_events_in_json() {
        let events = vec![Event {
            name: "a \"quoted\"\nname".into(),
            kind: EventKind::UserAnnotation,
            thread: 1,
            start_us: 1.5,
            end_us: 4.0,
            input_shapes: vec![vec![2, 3], vec![]],
        }];
        let text = chrome_trace(&events);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let e = &v["traceEvents"][0];
        assert_eq!(e["ph"], "X");
        assert_eq!(e["cat"], "user_annotation");
        assert_eq!(e["name"], "a \"quoted\"\nname");
        assert_eq!(e["ts"], 1.5);
        assert_eq!(e["dur"], 2.5);
        assert_eq!(e["args"]["Input Dims"], serde_json::json!([[2, 3], []]));
    }
}
