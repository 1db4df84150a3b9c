//! The shim's C ABI (`shim/gloo_shim.cc`).

use std::os::raw::{c_char, c_int, c_void};

#[repr(C)]
pub struct StoreVtable {
    pub this: *mut c_void,
    pub set: unsafe extern "C" fn(
        *mut c_void,
        *const c_char,
        usize,
        *const u8,
        usize,
        *mut c_char,
        usize,
    ) -> c_int,
    pub get: unsafe extern "C" fn(
        *mut c_void,
        *const c_char,
        usize,
        *mut *mut u8,
        *mut usize,
        *mut c_char,
        usize,
    ) -> c_int,
    pub free_value: unsafe extern "C" fn(*mut u8, usize),
    pub wait: unsafe extern "C" fn(
        *mut c_void,
        *const *const c_char,
        *const usize,
        usize,
        i64,
        *mut c_char,
        usize,
    ) -> c_int,
}

#[repr(C)]
pub struct Ctx {
    _private: [u8; 0],
}

extern "C" {
    pub fn ft_gloo_connect(
        store: StoreVtable,
        rank: c_int,
        size: c_int,
        host: *const c_char,
        timeout_ms: i64,
        err: *mut c_char,
        errlen: usize,
    ) -> *mut Ctx;
    pub fn ft_gloo_free(c: *mut Ctx);
    pub fn ft_gloo_allreduce(
        c: *mut Ctx,
        data: *mut c_void,
        count: usize,
        dtype: c_int,
        op: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_gloo_broadcast(
        c: *mut Ctx,
        data: *mut c_void,
        nbytes: usize,
        root: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_gloo_allgather(
        c: *mut Ctx,
        input: *const c_void,
        out: *mut c_void,
        nbytes: usize,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_gloo_barrier(c: *mut Ctx, err: *mut c_char, errlen: usize) -> c_int;
    pub fn ft_gloo_agree(
        c: *mut Ctx,
        fp: *const i64,
        fields: usize,
        data: *mut c_void,
        nbytes: usize,
        dtype: c_int,
        op: c_int,
        agreed: *mut c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_gloo_reduce(
        c: *mut Ctx,
        input: *const c_void,
        out: *mut c_void,
        count: usize,
        dtype: c_int,
        op: c_int,
        root: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_gloo_gather(
        c: *mut Ctx,
        input: *const c_void,
        out: *mut c_void,
        nbytes: usize,
        root: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_gloo_scatter(
        c: *mut Ctx,
        input: *const c_void,
        out: *mut c_void,
        nbytes: usize,
        root: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_gloo_alltoall(
        c: *mut Ctx,
        input: *const c_void,
        out: *mut c_void,
        nbytes: usize,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_gloo_alltoallv(
        c: *mut Ctx,
        input: *const c_void,
        in_bytes: *const i64,
        out: *mut c_void,
        out_bytes: *const i64,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_gloo_send(
        c: *mut Ctx,
        data: *const c_void,
        nbytes: usize,
        dst: c_int,
        tag: u64,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_gloo_recv(
        c: *mut Ctx,
        data: *mut c_void,
        nbytes: usize,
        src: c_int,
        tag: u64,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
}
