//! ONNX export from Rust (Note [ONNX export]): the model's structure as
//! ONNX's schema decodes it (opset, IR version, nodes, initializers holding
//! the module's own weights), symbolic batch dims, and the named errors.
//! Numerics against onnxruntime are checked by the Python suite
//! (test_onnx_export.py), where onnxruntime is installed.

use ferrotorch_core::{DType, Result, Tensor};
use ferrotorch_jit::onnx::proto::{tensor_shape_proto::dimension::Value, type_proto, ModelProto};
use ferrotorch_jit::onnx::{export, export_to, ExportOptions};
use ferrotorch_jit::{trace, trace_module};
use ferrotorch_nn as nn;
use nn::{Forward, Module};
use prost::Message;

fn ops(m: &ModelProto) -> Vec<String> {
    m.graph
        .as_ref()
        .unwrap()
        .node
        .iter()
        .map(|n| n.op_type.clone().unwrap())
        .collect()
}

#[test]
fn a_module_becomes_onnx_nodes_and_initializers() -> Result<()> {
    let net = nn::Sequential::new()
        .append(nn::Linear::new(3, 4, true)?)
        .append(nn::ReLU::inplace())
        .append(nn::Linear::new(4, 2, false)?);
    let x = Tensor::randn(&[5, 3], DType::F32)?;
    let m = trace_module(&net, &[x], |n, t| Ok(vec![n.forward(&t[0])?]))?;
    let opts = ExportOptions {
        input_names: vec!["x".into()],
        output_names: vec!["y".into()],
        dynamic_axes: vec![("x".into(), vec![(0, "batch".into())])],
        opset_version: None,
    };
    let model = ModelProto::decode(export(&m, &opts)?.as_slice()).unwrap();
    assert_eq!(model.ir_version, Some(10));
    assert_eq!(model.opset_import[0].version, Some(18));
    assert_eq!(ops(&model), ["Gemm", "Relu", "Gemm", "Identity"]);
    let g = model.graph.unwrap();
    let names: Vec<_> = g
        .initializer
        .iter()
        .map(|t| t.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["0.weight", "0.bias", "2.weight"]);
    let w = net
        .named_parameters()
        .into_iter()
        .find(|(n, _)| n == "0.weight")
        .unwrap()
        .1
        .tensor();
    assert_eq!(
        g.initializer[0].raw_data.as_deref(),
        Some(w.to_bytes()?.as_slice())
    );
    assert_eq!(g.initializer[0].dims, [4, 3]);
    let dim0 =
        |vi: &ferrotorch_jit::onnx::proto::ValueInfoProto| match &vi.r#type.as_ref().unwrap().value
        {
            Some(type_proto::Value::TensorType(t)) => {
                t.shape.as_ref().unwrap().dim[0].value.clone()
            }
            _ => None,
        };
    assert_eq!(dim0(&g.input[0]), Some(Value::DimParam("batch".into())));
    // the output's batch is open: it follows the input's
    assert_eq!(dim0(&g.output[0]), None);
    Ok(())
}

#[test]
fn traced_sizes_become_shape_nodes() -> Result<()> {
    let x = Tensor::randn(&[2, 3, 4], DType::F32)?;
    let m = trace(
        |t| {
            let n = ferrotorch_jit::size(&t[0], 0)?;
            let _ = n;
            Ok(vec![t[0].flatten(1, -1)?.exp()?])
        },
        &[x],
    )?;
    let model = ModelProto::decode(export(&m, &ExportOptions::default())?.as_slice()).unwrap();
    assert!(ops(&model).contains(&"Flatten".to_string()));
    assert!(ops(&model).contains(&"Exp".to_string()));
    Ok(())
}

#[test]
fn unmapped_ops_and_options_are_named_errors() -> Result<()> {
    let x = Tensor::randn(&[4], DType::F32)?;
    let m = trace(
        |t| Ok(vec![t[0].cumsum(0, None)?]),
        std::slice::from_ref(&x),
    )?;
    let e = export(&m, &ExportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("aten::cumsum has no ONNX mapping"), "{e}");
    let m = trace(|t| Ok(vec![t[0].relu()?]), &[x])?;
    let bad = ExportOptions {
        opset_version: Some(9),
        ..Default::default()
    };
    assert!(export(&m, &bad)
        .unwrap_err()
        .to_string()
        .contains("opset_version 9"));
    let dir = std::env::temp_dir().join(format!("ft_onnx_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("relu.onnx");
    export_to(&m, &path, &ExportOptions::default())?;
    let model = ModelProto::decode(std::fs::read(&path).unwrap().as_slice()).unwrap();
    assert_eq!(ops(&model), ["Relu", "Identity"]);
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
