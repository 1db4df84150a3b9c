//! The profiler records typed Rust calls, named ranges and backward nodes
//! on the thread that profiles, and nothing once stopped. One test: a
//! process runs one profile at a time.

use ferrotorch_core::profiler::{self, EventKind, ProfilerOptions};
use ferrotorch_core::Tensor;

#[test]
fn profile_records_ops_ranges_and_backward_on_its_thread() -> ferrotorch_core::Result<()> {
    let w = Tensor::ones(&[3, 4], ())?.requires_grad_(true)?;
    let prof = profiler::profile(ProfilerOptions {
        record_shapes: true,
    })?;
    // a second profile while one runs is refused
    assert!(profiler::profile(ProfilerOptions::default())
        .unwrap_err()
        .to_string()
        .contains("already enabled"));
    // another thread's ops are not this profile's
    std::thread::spawn(|| Tensor::ones(&[2], ()).unwrap().neg().unwrap())
        .join()
        .unwrap();
    {
        let _step = profiler::record_function("step");
        let x = Tensor::ones(&[2, 3], ())?;
        let y = x.matmul(&w)?.relu()?.sum()?;
        y.backward()?;
    }
    let done = prof.stop();
    Tensor::ones(&[2], ())?.exp()?; // after stop: not recorded

    let names: Vec<&str> = done.events().iter().map(|e| e.name.as_str()).collect();
    // the forward's ops, once each (backward formulas call ops too, inside
    // their node's range: MmBackward0's matmul)
    let inside_backward = |e: &profiler::Event| {
        done.events().iter().any(|b| {
            b.kind == EventKind::Backward && b.start_us <= e.start_us && e.end_us <= b.end_us
        })
    };
    for op in ["aten::matmul", "aten::relu", "aten::sum"] {
        let forward = done
            .events()
            .iter()
            .filter(|e| e.name == op && !inside_backward(e))
            .count();
        assert_eq!(forward, 1, "{op} in {names:?}");
    }
    let mm_backward = done
        .events()
        .iter()
        .find(|e| e.name.ends_with("MmBackward0"))
        .unwrap();
    assert!(done.events().iter().any(|e| e.name == "aten::matmul"
        && mm_backward.start_us <= e.start_us
        && e.end_us <= mm_backward.end_us));
    assert!(!names.contains(&"aten::neg") && !names.contains(&"aten::exp"));
    let backward: Vec<&str> = done
        .events()
        .iter()
        .filter(|e| e.kind == EventKind::Backward)
        .map(|e| e.name.as_str())
        .collect();
    assert!(
        backward.contains(&"autograd::engine::evaluate_function: SumBackward0"),
        "{backward:?}"
    );
    assert!(
        backward.contains(&"autograd::engine::evaluate_function: ReluBackward0"),
        "{backward:?}"
    );

    let mm = done
        .events()
        .iter()
        .find(|e| e.name == "aten::matmul")
        .unwrap();
    assert_eq!(mm.input_shapes, vec![vec![2, 3], vec![3, 4]]);
    let step = done.events().iter().find(|e| e.name == "step").unwrap();
    assert_eq!(step.kind, EventKind::UserAnnotation);
    // every event of the thread lies within the step range
    for e in done.events().iter().filter(|e| e.thread == step.thread) {
        assert!(
            e.start_us >= step.start_us && e.end_us <= step.end_us,
            "{e:?}"
        );
    }

    let avg = done.key_averages(false);
    let row = avg.iter().find(|r| r.key == "step").unwrap();
    let nested: f64 = done
        .events()
        .iter()
        .filter(|e| e.name != "step")
        .filter(|e| {
            // direct children: not inside another non-step event
            !done.events().iter().any(|p| {
                p.name != "step"
                    && !std::ptr::eq(p, *e)
                    && p.start_us <= e.start_us
                    && e.end_us <= p.end_us
                    && p.duration_us() > e.duration_us()
            })
        })
        .map(|e| e.duration_us())
        .sum();
    let expect = step.duration_us() - nested;
    assert!(
        (row.self_cpu_time_total - expect).abs() < 1e-6,
        "{} vs {expect}",
        row.self_cpu_time_total
    );
    let table = avg.table(Some("cpu_time_total"), 3);
    assert_eq!(
        table.lines().nth(3).unwrap().split_whitespace().next(),
        Some("step")
    );

    // a fresh profile after the first stopped
    let p2 = profiler::profile(ProfilerOptions::default())?;
    Tensor::ones(&[1], ())?.tanh()?;
    let names: Vec<String> = p2.stop().events().iter().map(|e| e.name.clone()).collect();
    assert_eq!(
        names,
        vec!["aten::ones".to_string(), "aten::tanh".to_string()]
    );
    Ok(())
}
