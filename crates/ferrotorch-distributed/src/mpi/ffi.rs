//! The shim's C ABI (`shim/mpi_shim.c`).

use std::os::raw::{c_char, c_int, c_void};

/// An `MPI_Comm`, boxed by the shim.
#[repr(C)]
pub struct Comm {
    _private: [u8; 0],
}

extern "C" {
    pub fn ft_mpi_init(
        rank: *mut c_int,
        size: *mut c_int,
        level: *mut c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_mpi_comm(
        ranks: *const c_int,
        n: c_int,
        rank: *mut c_int,
        size: *mut c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> *mut Comm;
    pub fn ft_mpi_comm_free(c: *mut Comm);
    pub fn ft_mpi_tag_ub() -> c_int;
    pub fn ft_mpi_abort(code: c_int);
    pub fn ft_mpi_allreduce(
        c: *mut Comm,
        data: *mut c_void,
        count: usize,
        dtype: c_int,
        op: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_mpi_reduce(
        c: *mut Comm,
        input: *const c_void,
        out: *mut c_void,
        count: usize,
        dtype: c_int,
        op: c_int,
        root: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_mpi_bcast(
        c: *mut Comm,
        data: *mut c_void,
        nbytes: usize,
        root: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_mpi_allgather(
        c: *mut Comm,
        input: *const c_void,
        out: *mut c_void,
        nbytes: usize,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_mpi_gather(
        c: *mut Comm,
        input: *const c_void,
        out: *mut c_void,
        nbytes: usize,
        root: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_mpi_scatter(
        c: *mut Comm,
        input: *const c_void,
        out: *mut c_void,
        nbytes: usize,
        root: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_mpi_alltoall(
        c: *mut Comm,
        input: *const c_void,
        out: *mut c_void,
        nbytes: usize,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_mpi_alltoallv(
        c: *mut Comm,
        input: *const c_void,
        in_bytes: *const i64,
        out: *mut c_void,
        out_bytes: *const i64,
        n: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_mpi_send(
        c: *mut Comm,
        data: *const c_void,
        nbytes: usize,
        dst: c_int,
        tag: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_mpi_recv(
        c: *mut Comm,
        data: *mut c_void,
        nbytes: usize,
        src: c_int,
        tag: c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    pub fn ft_mpi_barrier(c: *mut Comm, err: *mut c_char, errlen: usize) -> c_int;
}
