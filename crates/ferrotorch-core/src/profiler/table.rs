//! `key_averages()` and its `table()`, laid out as PyTorch prints them.

use super::Event;
use std::collections::HashMap;

/// One row of `key_averages()`: every event with one name (and input
/// shapes, when grouped by them).
#[derive(Clone, Debug, PartialEq)]
pub struct EventAvg {
    pub key: String,
    /// The shapes the row was grouped by (empty when not grouped).
    pub input_shapes: Vec<Vec<usize>>,
    /// Number of calls.
    pub count: usize,
    /// Time from start to end of each call, summed (µs).
    pub cpu_time_total: f64,
    /// That time less what was spent in events nested in it (µs).
    pub self_cpu_time_total: f64,
}

impl EventAvg {
    /// Average time per call (µs).
    pub fn cpu_time(&self) -> f64 {
        self.cpu_time_total / self.count.max(1) as f64
    }
}

/// The rows of `key_averages()`, in order of first appearance.
#[derive(Clone, Debug, Default)]
pub struct KeyAverages {
    rows: Vec<EventAvg>,
}

/// Each event's self time: its duration less its direct children's, a
/// child being an event of the same thread that lies within it.
fn self_times(events: &[Event]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&events[a], &events[b]);
        (x.thread, x.start_us)
            .partial_cmp(&(y.thread, y.start_us))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(y.end_us.total_cmp(&x.end_us))
    });
    let mut own: Vec<f64> = events.iter().map(Event::duration_us).collect();
    let mut stack: Vec<usize> = Vec::new();
    for &i in &order {
        let e = &events[i];
        while let Some(&top) = stack.last() {
            let t = &events[top];
            if t.thread != e.thread || t.end_us <= e.start_us {
                stack.pop();
            } else {
                break;
            }
        }
        if let Some(&parent) = stack.last() {
            own[parent] -= e.duration_us();
        }
        stack.push(i);
    }
    own.iter().map(|t| t.max(0.0)).collect()
}

pub(super) fn key_averages(events: &[Event], by_shape: bool) -> KeyAverages {
    let own = self_times(events);
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by(|&a, &b| events[a].start_us.total_cmp(&events[b].start_us));
    let mut rows: Vec<EventAvg> = Vec::new();
    let mut at: HashMap<(String, Vec<Vec<usize>>), usize> = HashMap::new();
    for i in order {
        let e = &events[i];
        let shapes = if by_shape {
            e.input_shapes.clone()
        } else {
            Vec::new()
        };
        let k = *at
            .entry((e.name.clone(), shapes.clone()))
            .or_insert_with(|| {
                rows.push(EventAvg {
                    key: e.name.clone(),
                    input_shapes: shapes,
                    count: 0,
                    cpu_time_total: 0.0,
                    self_cpu_time_total: 0.0,
                });
                rows.len() - 1
            });
        let r = &mut rows[k];
        r.count += 1;
        r.cpu_time_total += e.duration_us();
        r.self_cpu_time_total += own[i];
    }
    KeyAverages { rows }
}

/// PyTorch's `_format_time`: µs below 1 ms, then ms, then s.
fn format_time(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.3}s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.3}ms", us / 1e3)
    } else {
        format!("{us:.3}us")
    }
}

impl KeyAverages {
    /// The rows.
    pub fn iter(&self) -> std::slice::Iter<'_, EventAvg> {
        self.rows.iter()
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table PyTorch prints: name, self and total CPU time with their
    /// shares of the total self time, average time, calls, and (when grouped
    /// by shape) the input shapes; sorted by `sort_by` (`cpu_time_total`,
    /// `self_cpu_time_total`, `cpu_time`, `count`, descending), at most
    /// `row_limit` rows.
    pub fn table(&self, sort_by: Option<&str>, row_limit: usize) -> String {
        let mut rows: Vec<&EventAvg> = self.rows.iter().collect();
        let key = |r: &EventAvg| -> f64 {
            match sort_by {
                Some("cpu_time_total") => r.cpu_time_total,
                Some("self_cpu_time_total") => r.self_cpu_time_total,
                Some("cpu_time") => r.cpu_time(),
                Some("self_cpu_time") => r.self_cpu_time_total / r.count.max(1) as f64,
                Some("count") => r.count as f64,
                _ => 0.0,
            }
        };
        if sort_by.is_some() {
            rows.sort_by(|a, b| key(b).total_cmp(&key(a)));
        }
        rows.truncate(row_limit);
        let total_self: f64 = self.rows.iter().map(|r| r.self_cpu_time_total).sum();
        let shapes = self.rows.iter().any(|r| !r.input_shapes.is_empty());
        let name_w = rows
            .iter()
            .map(|r| r.key.len())
            .max()
            .unwrap_or(4)
            .clamp(4, 55);
        let mut headers = vec![
            "Name",
            "Self CPU %",
            "Self CPU",
            "CPU total %",
            "CPU total",
            "CPU time avg",
            "# of Calls",
        ];
        if shapes {
            headers.push("Input Shapes");
        }
        let widths: Vec<usize> = headers
            .iter()
            .enumerate()
            .map(|(i, _)| match i {
                0 => name_w,
                7 => 40,
                _ => 12,
            })
            .collect();
        let sep: String = widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  ")
            + "  \n";
        let line = |cells: Vec<String>| -> String {
            let mut s = String::new();
            for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
                if i == 7 {
                    s.push_str(&format!("{c:<w$}  "));
                } else {
                    s.push_str(&format!("{c:>w$}  "));
                }
            }
            s.push('\n');
            s
        };
        let pct = |v: f64| {
            if total_self > 0.0 {
                format!("{:.2}%", 100.0 * v / total_self)
            } else {
                "0.00%".to_string()
            }
        };
        let mut out = sep.clone();
        out.push_str(&line(headers.iter().map(|h| h.to_string()).collect()));
        out.push_str(&sep);
        for r in rows {
            let mut name = r.key.clone();
            if name.len() > name_w {
                name.truncate(name_w.saturating_sub(3));
                name.push_str("...");
            }
            let mut cells = vec![
                name,
                pct(r.self_cpu_time_total),
                format_time(r.self_cpu_time_total),
                pct(r.cpu_time_total),
                format_time(r.cpu_time_total),
                format_time(r.cpu_time()),
                r.count.to_string(),
            ];
            if shapes {
                cells.push(format!("{:?}", r.input_shapes));
            }
            out.push_str(&line(cells));
        }
        out.push_str(&sep);
        out.push_str(&format!(
            "Self CPU time total: {}\n",
            format_time(total_self)
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Event, EventKind};
    use super::*;

    fn ev(name: &str, thread: u64, start_us: f64, end_us: f64) -> Event {
        Event {
            name: name.into(),
            kind: EventKind::Op,
            thread,
            start_us,
            end_us,
            input_shapes: vec![vec![2, 3]],
        }
    }

    #[test]
    fn self_time_subtracts_direct_children_only() {
        // step [0, 100) holds a [10, 40) which holds b [20, 30); c [50, 60);
        // another thread's d [5, 95) is nobody's child
        let events = vec![
            ev("b", 1, 20.0, 30.0),
            ev("a", 1, 10.0, 40.0),
            ev("c", 1, 50.0, 60.0),
            ev("step", 1, 0.0, 100.0),
            ev("d", 2, 5.0, 95.0),
        ];
        assert_eq!(self_times(&events), vec![10.0, 20.0, 10.0, 60.0, 90.0]);
        let avg = key_averages(&events, false);
        let step = avg.iter().find(|r| r.key == "step").unwrap();
        assert_eq!(
            (step.count, step.cpu_time_total, step.self_cpu_time_total),
            (1, 100.0, 60.0)
        );
        let table = avg.table(Some("self_cpu_time_total"), 2);
        let names: Vec<&str> = table
            .lines()
            .skip(3)
            .take(2)
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(names, vec!["d", "step"]);
        // shares of the total self time (190 µs)
        assert!(table.contains("47.37%"), "{table}");
        assert!(table.contains("Self CPU time total: 190.000us"), "{table}");
    }

    #[test]
    fn times_format_as_pytorch() {
        assert_eq!(format_time(12.5), "12.500us");
        assert_eq!(format_time(1500.0), "1.500ms");
        assert_eq!(format_time(2.5e6), "2.500s");
    }
}
