//! The C ABI called from Rust as C calls it: boxed results, DLPack and
//! foreign memory, handles of the wrong kind, modules, optimizers,
//! schedulers, data loaders and saved programs.

use ferrotorch_capi::autograd::*;
use ferrotorch_capi::data::*;
use ferrotorch_capi::dlpack::*;
use ferrotorch_capi::nn::*;
use ferrotorch_capi::ops::*;
use ferrotorch_capi::optim::*;
use ferrotorch_capi::script::*;
use ferrotorch_capi::status::{ft_last_error, FtStatus};
use ferrotorch_capi::tensor::*;
use ferrotorch_capi::value::{FtTag, FtValue};
use std::ffi::{c_void, CStr, CString};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};

const F32: i32 = FtDType::FtFloat32 as i32;

fn ok(s: FtStatus) {
    assert_eq!(s, FtStatus::FtOk, "{}", last_error());
}

fn last_error() -> String {
    // SAFETY: never null, NUL-terminated.
    unsafe { CStr::from_ptr(ft_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn from_f32(data: &[f32], shape: &[i64]) -> *mut FtTensor {
    let mut t = null_mut();
    ok(ft_tensor_from_data(
        data.as_ptr() as *const c_void,
        std::mem::size_of_val(data),
        shape.as_ptr(),
        shape.len(),
        F32,
        &mut t,
    ));
    t
}

fn to_f32(t: *const FtTensor) -> Vec<f32> {
    let mut n = 0;
    ok(ft_tensor_numel(t, &mut n));
    let mut v = vec![0f32; n];
    ok(ft_tensor_copy_to(t, v.as_mut_ptr() as *mut c_void, n * 4));
    v
}

fn shape(t: *const FtTensor) -> Vec<i64> {
    let mut s = [0i64; 8];
    let mut n = 0;
    ok(ft_tensor_shape(t, s.as_mut_ptr(), 8, &mut n));
    s[..n].to_vec()
}

fn value_of(t: *mut FtTensor) -> FtValue {
    FtValue {
        tag: FtTag::FtTagTensor as i32,
        i: 0,
        f: 0.0,
        tensor: t,
        list: std::ptr::null(),
        len: 0,
        str: std::ptr::null(),
    }
}

fn int_value(i: i64) -> FtValue {
    FtValue {
        tag: FtTag::FtTagInt as i32,
        i,
        ..value_of(null_mut())
    }
}

fn call(name: &str, args: &[FtValue]) -> Vec<FtValue> {
    let name = CString::new(name).unwrap();
    let mut out: Vec<FtValue> = (0..8).map(|_| value_of(null_mut())).collect();
    let mut n = 0;
    ok(ft_call(
        name.as_ptr(),
        args.as_ptr(),
        args.len(),
        std::ptr::null(),
        0,
        out.as_mut_ptr(),
        out.len(),
        &mut n,
    ));
    out.truncate(n);
    out
}

#[test]
fn boxed_results_tuples_lists_and_scalars() {
    let x = from_f32(&[3.0, 1.0, 2.0, 0.0, 5.0, 4.0], &[2, 3]);
    // a tuple (values, indices)
    let r = call("max", &[value_of(x), int_value(1)]);
    assert_eq!(r.len(), 2);
    assert_eq!(to_f32(r[0].tensor), [3.0, 5.0]);
    let mut idx = [0i64; 2];
    ok(ft_tensor_copy_to(
        r[1].tensor,
        idx.as_mut_ptr() as *mut c_void,
        16,
    ));
    assert_eq!(idx, [0, 1]);
    // a list of tensors: one result each
    let c = call("chunk", &[value_of(x), int_value(3), int_value(1)]);
    assert_eq!(c.len(), 3);
    assert_eq!(to_f32(c[2].tensor), [2.0, 4.0]);
    // a bool
    let b = call("equal", &[value_of(x), value_of(x)]);
    assert_eq!((b[0].tag, b[0].i), (FtTag::FtTagBool as i32, 1));
    // too small a results array: nothing allocated, an error
    let mut one = [value_of(null_mut())];
    let mut n = 0;
    let name = CString::new("chunk").unwrap();
    let args = [value_of(x), int_value(3), int_value(1)];
    let s = ft_call(
        name.as_ptr(),
        args.as_ptr(),
        3,
        std::ptr::null(),
        0,
        one.as_mut_ptr(),
        1,
        &mut n,
    );
    assert_eq!(s, FtStatus::FtErrorValue);
    assert!(last_error().contains("3 values"), "{}", last_error());
    for v in r.iter().chain(&c) {
        ok(ft_tensor_free(v.tensor));
    }
    ok(ft_tensor_free(x));
}

#[test]
fn op_table_lists_schemas_and_flags() {
    let mut id = 0;
    let add = CString::new("add").unwrap();
    ok(ft_op_find(add.as_ptr(), &mut id));
    assert!(id < ft_op_count());
    let mut n = 0;
    ok(ft_op_num_overloads(id, &mut n));
    assert!(n >= 2);
    let mut s = std::ptr::null();
    let texts: Vec<String> = (0..n)
        .map(|i| {
            ok(ft_op_schema(id, i, &mut s));
            unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
        })
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("add.Tensor(Tensor self, Tensor other")),
        "{texts:?}"
    );
    let mut flags = 0;
    ok(ft_op_flags(id, &mut flags));
    assert_eq!(flags & 1, 1, "add is a method");
    assert_eq!(ft_op_schema(id, 99, &mut s), FtStatus::FtErrorIndex);
    assert_eq!(ft_op_flags(u32::MAX, &mut flags), FtStatus::FtErrorKey);
}

#[test]
fn handles_of_the_wrong_kind_are_refused() {
    let mut m = null_mut();
    ok(ft_nn_relu(&mut m));
    let mut out = null_mut();
    // an FtModule passed where an FtTensor belongs
    let s = ft_neg(m as *const FtTensor, &mut out);
    assert_eq!(s, FtStatus::FtErrorInvalidHandle);
    assert!(last_error().contains("FtTensor"), "{}", last_error());
    ok(ft_module_free(m));
    assert_eq!(ft_module_free(m), FtStatus::FtErrorInvalidHandle);
    ok(ft_tensor_free(null_mut()));
    // a pointer that never was a handle (caught in debug builds)
    let mut junk = [0u64; 8];
    let s = ft_neg(junk.as_mut_ptr() as *const FtTensor, &mut out);
    assert_eq!(s, FtStatus::FtErrorInvalidHandle);
}

static RELEASED: AtomicUsize = AtomicUsize::new(0);

extern "C" fn release(ctx: *mut c_void) {
    RELEASED.fetch_add(ctx as usize, Ordering::SeqCst);
}

#[test]
fn from_blob_shares_memory_and_releases_it_once() {
    let mut data = vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let shape = [3i64, 2];
    let strides = [1i64, 3]; // a transposed view
    let mut t = null_mut();
    ok(ft_tensor_from_blob(
        data.as_mut_ptr() as *mut c_void,
        shape.as_ptr(),
        strides.as_ptr(),
        2,
        F32,
        Some(release),
        7 as *mut c_void,
        &mut t,
    ));
    assert_eq!(to_f32(t), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    let mut y = null_mut();
    ok(ft_mul(t, t, &mut y));
    let mut t2 = null_mut();
    ok(ft_tensor_clone(t, &mut t2));
    ok(ft_tensor_free(t));
    assert_eq!(RELEASED.load(Ordering::SeqCst), 0, "a reference remains");
    ok(ft_tensor_free(t2));
    assert_eq!(RELEASED.load(Ordering::SeqCst), 7);
    assert_eq!(to_f32(y), [1.0, 16.0, 4.0, 25.0, 9.0, 36.0]);
    ok(ft_tensor_free(y));
    // a refused layout releases too: misaligned floats
    let bytes = data.as_mut_ptr() as usize + 1;
    let s = ft_tensor_from_blob(
        bytes as *mut c_void,
        shape.as_ptr(),
        std::ptr::null(),
        2,
        F32,
        Some(release),
        std::ptr::dangling_mut::<c_void>(), // ctx 1
        &mut t,
    );
    assert_eq!(s, FtStatus::FtErrorValue);
    assert!(last_error().contains("aligned"), "{}", last_error());
    assert_eq!(RELEASED.load(Ordering::SeqCst), 8);
}

static RELEASED_MANY: AtomicUsize = AtomicUsize::new(0);

extern "C" fn release_many(ctx: *mut c_void) {
    RELEASED_MANY.fetch_add(ctx as usize, Ordering::SeqCst);
}

#[test]
fn free_many_frees_every_handle_and_reports_a_stale_one() {
    let mut data = [1.0f32, 2.0, 3.0];
    let mut blob = null_mut();
    let n = [3i64];
    ok(ft_tensor_from_blob(
        data.as_mut_ptr() as *mut c_void,
        n.as_ptr(),
        std::ptr::null(),
        1,
        F32,
        Some(release_many),
        5 as *mut c_void,
        &mut blob,
    ));
    let (mut c1, mut c2) = (null_mut(), null_mut());
    ok(ft_tensor_clone(blob, &mut c1));
    ok(ft_tensor_clone(blob, &mut c2));
    let stale = from_f32(&[1.0], &[1]);
    ok(ft_tensor_free(stale));
    // blob, a null, a freed handle, then two more live references
    let hs = [blob, null_mut(), stale, c1, c2];
    let s = ft_tensor_free_many(hs.as_ptr(), hs.len());
    assert_eq!(s, FtStatus::FtErrorInvalidHandle);
    assert!(last_error().contains("already freed"), "{}", last_error());
    // the handles after the stale one were freed too: the memory is released
    assert_eq!(RELEASED_MANY.load(Ordering::SeqCst), 5);
    assert_eq!(ft_tensor_free(c2), FtStatus::FtErrorInvalidHandle);
    ok(ft_tensor_free_many(std::ptr::null(), 0));
    assert_eq!(
        ft_tensor_free_many(std::ptr::null(), 2),
        FtStatus::FtErrorNullHandle
    );
}

#[test]
fn dlpack_round_trip_shares_memory() {
    let x = from_f32(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let mut xt = null_mut();
    ok(ft_transpose(x, 0, 1, &mut xt));
    let mut m = null_mut();
    ok(ft_tensor_to_dlpack(xt, &mut m));
    let mut back = null_mut();
    ok(ft_tensor_from_dlpack(m, &mut back));
    let (mut p1, mut p2) = (null_mut(), null_mut());
    ok(ft_tensor_data_ptr(x, &mut p1));
    ok(ft_tensor_data_ptr(back, &mut p2));
    assert_eq!(p1, p2, "no copy");
    assert_eq!(to_f32(back), [1.0, 3.0, 2.0, 4.0]);
    // requires_grad tensors are refused, as torch refuses them
    ok(ft_tensor_set_requires_grad(x, true));
    assert_eq!(ft_tensor_to_dlpack(x, &mut m), FtStatus::FtErrorRuntime);
    for t in [x, xt, back] {
        ok(ft_tensor_free(t));
    }
    assert_eq!(
        ft_tensor_from_dlpack(null_mut(), &mut back),
        FtStatus::FtErrorNullHandle
    );
}

#[test]
fn conv_batchnorm_pool_and_grad_mode() {
    ok(ft_manual_seed(1));
    let mut conv = null_mut();
    ok(ft_nn_conv2d(3, 4, 3, 1, 1, 1, 1, true, &mut conv));
    let mut bn = null_mut();
    ok(ft_nn_batchnorm2d(4, 1e-5, 0.1, &mut bn));
    let mut pool = null_mut();
    ok(ft_nn_maxpool2d(2, 0, 0, &mut pool));
    let mut flat = null_mut();
    ok(ft_nn_flatten(1, -1, &mut flat));
    let mods = [conv as *const FtModule, bn, pool, flat];
    let mut net = null_mut();
    ok(ft_nn_sequential(mods.as_ptr(), 4, &mut net));
    let mut x = null_mut();
    ok(ft_randn([2i64, 3, 8, 8].as_ptr(), 4, F32, &mut x));
    let mut y = null_mut();
    ok(ft_module_forward(net, x, &mut y));
    assert_eq!(shape(y), [2, 4 * 4 * 4]);
    let mut rg = false;
    ok(ft_tensor_requires_grad(y, &mut rg));
    assert!(rg);
    // under set_grad_enabled(false) nothing records
    let mut prev = false;
    ok(ft_set_grad_enabled(false, &mut prev));
    assert!(prev && !ft_is_grad_enabled());
    let mut z = null_mut();
    ok(ft_module_forward(net, x, &mut z));
    ok(ft_tensor_requires_grad(z, &mut rg));
    assert!(!rg);
    ok(ft_set_grad_enabled(prev, null_mut()));
    // the state dict names follow torch: 1.running_mean is a buffer
    let mut sd = null_mut();
    ok(ft_module_state_dict(net, &mut sd));
    let mut t = null_mut();
    let key = CString::new("1.running_mean").unwrap();
    ok(ferrotorch_capi::state::ft_state_dict_get(
        sd,
        key.as_ptr(),
        &mut t,
    ));
    assert_eq!(shape(t), [4]);
    let missing = CString::new("9.weight").unwrap();
    let s = ferrotorch_capi::state::ft_state_dict_get(sd, missing.as_ptr(), &mut t);
    assert_eq!(s, FtStatus::FtErrorKey);
    ok(ferrotorch_capi::state::ft_state_dict_free(sd));
    for m in [conv, bn, pool, flat, net] {
        ok(ft_module_free(m));
    }
    for t in [x, y, z, t] {
        ok(ft_tensor_free(t));
    }
}

#[test]
fn sgd_with_step_lr_and_a_data_loader() {
    // fit y = 2x with one weight: SGD on batches, the rate decayed
    let xs: Vec<f32> = (0..16).map(|i| i as f32 / 8.0).collect();
    let ys: Vec<f32> = xs.iter().map(|x| 2.0 * x).collect();
    let (x, y) = (from_f32(&xs, &[16, 1]), from_f32(&ys, &[16, 1]));
    let mut w = null_mut();
    ok(ft_zeros([1i64, 1].as_ptr(), 2, F32, &mut w));
    ok(ft_tensor_set_requires_grad(w, true));
    let mut opt = null_mut();
    ok(ft_optim_sgd(
        [w as *const FtTensor].as_ptr(),
        1,
        0.3,
        0.0,
        0.0,
        0.0,
        false,
        &mut opt,
    ));
    let mut sched = null_mut();
    ok(ft_lr_step(opt, 2, 0.5, &mut sched));
    let mut dl = null_mut();
    ok(ft_data_loader_new(
        [x as *const FtTensor, y].as_ptr(),
        2,
        4,
        true,
        false,
        0,
        &mut dl,
    ));
    let mut nb = 0;
    ok(ft_data_loader_len(dl, &mut nb));
    assert_eq!(nb, 4);
    for _epoch in 0..4 {
        let mut seen = 0;
        loop {
            let mut batch = [null_mut(); 2];
            let mut n = 0;
            ok(ft_data_loader_next(dl, batch.as_mut_ptr(), 2, &mut n));
            if n == 0 {
                break;
            }
            seen += 1;
            assert_eq!(shape(batch[0]), [4, 1]);
            let (mut p, mut d, mut l) = (null_mut(), null_mut(), null_mut());
            ok(ft_matmul(batch[0], w, &mut p));
            ok(ft_sub(p, batch[1], &mut d));
            ok(ft_mul(d, d, &mut l));
            let mut loss = null_mut();
            ok(ft_mean(l, &mut loss));
            ok(ft_optimizer_zero_grad(opt));
            ok(ft_tensor_backward(loss, std::ptr::null(), false, false));
            ok(ft_optimizer_step(opt));
            for t in [p, d, l, loss, batch[0], batch[1]] {
                ok(ft_tensor_free(t));
            }
        }
        assert_eq!(seen, 4);
        ok(ft_scheduler_step(sched, opt));
    }
    let mut lr = 0.0;
    ok(ft_optimizer_get_lr(opt, 0, &mut lr));
    assert_eq!(lr, 0.3 * 0.25, "StepLR(2, 0.5) after 4 epochs");
    ok(ft_scheduler_get_last_lr(sched, 0, &mut lr));
    assert_eq!(lr, 0.075);
    let w_now = to_f32(w)[0];
    assert!((w_now - 2.0).abs() < 0.01, "w = {w_now}");
    ok(ft_scheduler_free(sched));
    ok(ft_optimizer_free(opt));
    ok(ft_data_loader_free(dl));
    for t in [x, y, w] {
        ok(ft_tensor_free(t));
    }
}

#[test]
fn saved_program_runs_as_python_ran_it() {
    let fixtures = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../ferrotorch-node/test/fixtures"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{fixtures}/mlp.json")).unwrap())
            .unwrap();
    let flat = |v: &serde_json::Value| -> Vec<f32> {
        v.as_array()
            .unwrap()
            .iter()
            .flat_map(|r| {
                r.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap() as f32)
            })
            .collect()
    };
    let path = CString::new(format!("{fixtures}/mlp.pt")).unwrap();
    let mut m = null_mut();
    ok(ft_script_module_load(path.as_ptr(), &mut m));
    let x = from_f32(&flat(&json["input"]), &[2, 4]);
    let mut outs = [null_mut(); 2];
    let mut n = 0;
    ok(ft_script_module_forward(
        m,
        [x as *const FtTensor].as_ptr(),
        1,
        outs.as_mut_ptr(),
        2,
        &mut n,
    ));
    assert_eq!(n, 1);
    assert_eq!(to_f32(outs[0]), flat(&json["output"]));
    ok(ft_tensor_free(outs[0]));
    // a file that is not a program is an error, not a crash
    let bad = CString::new(format!("{fixtures}/mlp.json")).unwrap();
    let mut m2 = null_mut();
    assert_ne!(ft_script_module_load(bad.as_ptr(), &mut m2), FtStatus::FtOk);
    assert!(m2.is_null());
    ok(ft_script_module_free(m));
    ok(ft_tensor_free(x));
}

#[test]
fn an_archive_pytorch_traced_and_saved_runs_with_its_output() {
    // torch.jit.trace(...).save() of a CNN (ferrotorch-jit's TorchScript
    // fixtures, gen.py)
    let fixtures = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../ferrotorch-jit/tests/fixtures/torchscript"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{fixtures}/cnn_io.json")).unwrap())
            .unwrap();
    let floats = |k: &str| -> Vec<f32> {
        json[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect()
    };
    let path = CString::new(format!("{fixtures}/cnn.pt")).unwrap();
    let mut m = null_mut();
    ok(ft_script_module_load(path.as_ptr(), &mut m));
    let x = from_f32(&floats("input"), &[2, 3, 8, 8]);
    let mut outs = [null_mut(); 1];
    let mut n = 0;
    ok(ft_script_module_forward(
        m,
        [x as *const FtTensor].as_ptr(),
        1,
        outs.as_mut_ptr(),
        1,
        &mut n,
    ));
    assert_eq!(n, 1);
    let got = to_f32(outs[0]);
    let want = floats("output");
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "{g} vs PyTorch's {w}"
        );
    }
    ok(ft_tensor_free(outs[0]));
    // a scripted archive is an error naming the construct, not a crash
    let scripted = CString::new(format!("{fixtures}/scripted.pt")).unwrap();
    let mut m2 = null_mut();
    assert_ne!(
        ft_script_module_load(scripted.as_ptr(), &mut m2),
        FtStatus::FtOk
    );
    let msg = unsafe { CStr::from_ptr(ft_last_error()) }
        .to_str()
        .unwrap()
        .to_string();
    assert!(msg.contains("'if' is control flow"), "{msg}");
    ok(ft_script_module_free(m));
    ok(ft_tensor_free(x));
}

#[test]
fn complex32_is_torchs_scalar_type_8() {
    // torch's c10::ScalarType numbers ComplexHalf 8
    assert_eq!(FtDType::FtComplex32 as i32, 8);
    let mut z = null_mut();
    ok(ft_ones([2i64].as_ptr(), 1, 8, &mut z));
    let mut code = -1;
    ok(ft_tensor_dtype(z, &mut code));
    assert_eq!(code, 8);
    let mut s = null_mut();
    ok(ft_tensor_to_string(z, &mut s));
    let text = unsafe { CStr::from_ptr(s) }.to_str().unwrap().to_string();
    ft_string_free(s);
    assert_eq!(text, "tensor([1.+0.j, 1.+0.j], dtype=torch.complex32)");
    let mut bad = null_mut();
    assert_ne!(ft_ones([2i64].as_ptr(), 1, 12, &mut bad), FtStatus::FtOk);
    ok(ft_tensor_free(z));
}
