//! Compiling one function for the host with Cranelift's JIT: the ISA
//! (built once, with the host's features), a module per function, and
//! [`Code`], which owns the machine code and frees it when dropped.

use crate::emit::Target;
use cranelift_codegen::ir::{Signature, UserFuncName};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The host ISA, or why there is none.
///
/// # Note [Interleaved copies]
/// Cranelift's optimiser (`opt_level=speed`) rebuilds each function as an
/// e-graph and places every pure instruction just before its first use,
/// which turns a loop body that evaluates an expression for several
/// vectors into one vector's whole chain after another: a chain of
/// transcendentals is then latency-bound (exp, log, two divisions in a
/// row). Our kernels are built already simplified, so they are compiled
/// with `opt_level=none`, which keeps the order they are emitted in, and
/// the emitters interleave [`crate::kernel::UNROLL`] copies op by op
/// (`emit::eval_copies`): a 16-op chain ran 1.75x faster, W9 1.2x.
pub(crate) fn host_isa() -> Result<OwnedTargetIsa, String> {
    static ISA: OnceLock<Result<OwnedTargetIsa, String>> = OnceLock::new();
    ISA.get_or_init(|| {
        let mut flags = settings::builder();
        let set = |f: &mut settings::Builder, k: &str, v: &str| {
            f.set(k, v).map_err(|e| format!("cranelift flag {k}: {e}"))
        };
        set(&mut flags, "opt_level", "none")?;
        set(&mut flags, "use_colocated_libcalls", "false")?;
        set(&mut flags, "is_pic", "false")?;
        let isa = cranelift_native::builder()
            .map_err(|e| format!("no code generator for this CPU: {e}"))?;
        isa.finish(settings::Flags::new(flags))
            .map_err(|e| format!("cranelift: {e}"))
    })
    .clone()
}

/// Whether native code can be generated here.
pub fn available() -> bool {
    host_isa().is_ok()
}

/// Machine code of one function, alive as long as this value.
pub(crate) struct Code {
    module: Option<JITModule>,
    /// The function's address.
    pub ptr: *const u8,
    /// How long compiling took.
    pub compile_time: Duration,
}

// SAFETY: the module is only read after `finalize_definitions` (its code
// is immutable and executable), and freed once, by `Drop`.
unsafe impl Send for Code {}
unsafe impl Sync for Code {}

impl Drop for Code {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: `ptr` dies with `self`; no caller can hold it past
            // the owner's lifetime (the owners hand out no raw pointers).
            unsafe { m.free_memory() };
        }
    }
}

/// Compile one function with signature `sig` (made by `make_sig` from the
/// module's defaults) whose body `fill` builds.
pub(crate) fn compile(
    name: &str,
    make_sig: impl FnOnce(&mut Signature, &Target),
    fill: impl FnOnce(&mut FunctionBuilder, &Target),
) -> Result<Code, String> {
    let start = Instant::now();
    let isa = host_isa()?;
    let frontend = isa.frontend_config();
    let target = Target {
        fma: isa.has_native_fma(),
        ptr: isa.pointer_type(),
        call_conv: isa.default_call_conv(),
    };
    let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
    let mut sig = module.make_signature();
    make_sig(&mut sig, &target);
    let id = module
        .declare_function(name, Linkage::Local, &sig)
        .map_err(|e| format!("cranelift: {e}"))?;
    let mut ctx: Context = module.make_context();
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        fill(&mut b, &target);
        b.seal_all_blocks();
        b.finalize(frontend);
    }
    module
        .define_function(id, &mut ctx)
        .map_err(|e| format!("cranelift could not compile {name}: {e:?}"))?;
    // a developer's view of the code: `FERROTORCH_DUMP_CODE=dir` writes
    // each function's machine code to `dir/<name>.bin` (read it with
    // `objdump -D -b binary -m i386:x86-64`)
    if let Ok(dir) = std::env::var("FERROTORCH_DUMP_CODE") {
        if let Some(c) = ctx.compiled_code() {
            let _ = std::fs::write(format!("{dir}/{name}.bin"), c.code_buffer());
        }
    }
    module
        .finalize_definitions()
        .map_err(|e| format!("cranelift: {e}"))?;
    let ptr = module.get_finalized_function(id);
    Ok(Code {
        module: Some(module),
        ptr,
        compile_time: start.elapsed(),
    })
}
