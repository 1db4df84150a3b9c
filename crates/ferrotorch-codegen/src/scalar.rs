//! Scalar functions: an [`Expr`] of Python floats (an fx graph, seeds/000
//! Part I) compiled to one native function of `f64`s.

use crate::emit::{eval, Em, Target};
use crate::expr::Expr;
use crate::host::{compile, Code};
use cranelift_codegen::ir::{types, AbiParam, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;
use std::time::Duration;

type RawScalar = unsafe extern "C" fn(*const f64, *mut f64);

/// The body of `fn(args: *const f64, outs: *mut f64)` computing `expr`
/// (shared with the cross compiler).
pub(crate) fn fill(b: &mut FunctionBuilder, t: &Target, expr: &Expr) {
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let (args, outs) = (b.block_params(entry)[0], b.block_params(entry)[1]);
    let mem = MemFlagsData::trusted();
    let xs: Vec<Value> = (0..expr.n_inputs)
        .map(|k| b.ins().load(types::F64, mem, args, 8 * k as i32))
        .collect();
    let mut em = Em {
        b,
        ty: types::F64,
        target: *t,
        pool: None,
    };
    let ys = eval(&mut em, expr, &mut |_, k| xs[k]);
    for (j, y) in ys.into_iter().enumerate() {
        b.ins().store(mem, y, outs, 8 * j as i32);
    }
    b.ins().return_(&[]);
}

/// A compiled scalar function: `n_inputs` floats in, `n_outputs` out.
pub struct ScalarFn {
    code: Code,
    n_inputs: usize,
    n_outputs: usize,
}

impl ScalarFn {
    /// Compile `expr`, computing in f64.
    pub fn compile(expr: &Expr) -> Result<ScalarFn, String> {
        expr.validate()?;
        let code = compile(
            "scalar",
            |sig, t| {
                sig.params.push(AbiParam::new(t.ptr));
                sig.params.push(AbiParam::new(t.ptr));
            },
            |b, t| fill(b, t, expr),
        )?;
        Ok(ScalarFn {
            code,
            n_inputs: expr.n_inputs,
            n_outputs: expr.outputs.len(),
        })
    }

    /// How many arguments it takes.
    pub fn n_inputs(&self) -> usize {
        self.n_inputs
    }

    /// How many results it returns.
    pub fn n_outputs(&self) -> usize {
        self.n_outputs
    }

    /// How long compiling took.
    pub fn compile_time(&self) -> Duration {
        self.code.compile_time
    }

    /// Call it: an error (not undefined behaviour) for the wrong number
    /// of arguments.
    pub fn call(&self, args: &[f64]) -> Result<Vec<f64>, String> {
        if args.len() != self.n_inputs {
            return Err(format!(
                "the compiled function takes {} arguments ({} given)",
                self.n_inputs,
                args.len()
            ));
        }
        let mut out = vec![0.0; self.n_outputs];
        // SAFETY: compiled for this signature; `args` holds n_inputs
        // floats and `out` n_outputs, as the code reads and writes.
        unsafe {
            let f: RawScalar = std::mem::transmute(self.code.ptr);
            f(args.as_ptr(), out.as_mut_ptr());
        }
        Ok(out)
    }
}
