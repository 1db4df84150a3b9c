//! Tensors between processes (`torch.multiprocessing`'s role in Rust):
//! [`send_tensor`] shares a tensor's storage (Note [Shared memory]) and
//! sends its file descriptor over a Unix socket with `SCM_RIGHTS`, with a
//! small description; [`recv_tensor`] checks both and maps the same
//! memory, so writes on either side are seen by the other. No tensor bytes
//! travel through the socket.
//!
//! # Note [Tensor messages]
//! A message is a header of 12 bytes — the magic `FTSH`, a format version
//! (1) and the body's length — then the body: dtype name (a length byte
//! and ASCII), the number of dimensions (u32), each size and stride (u64),
//! the storage offset in elements, the storage's byte offset in its file
//! and its byte size (u64 each), and a requires-grad byte; all little
//! endian. Exactly one descriptor rides with the header. A receiver reads
//! the header, refuses a wrong magic or version, a body over
//! [`MAX_BODY`] bytes, a missing descriptor or more than one (extras are
//! closed), and a truncated control message (the "received 0 items of
//! ancdata" of PyTorch, when this process is out of descriptors: an error
//! naming the limit here, not a hang or a garbage tensor).

#![cfg(unix)]

use crate::dtype::DType;
use crate::error::Result;
use crate::storage::shared::SharedFile;
use crate::tensor::shared::{SharedTensorMeta, MAX_SHARED_DIMS};
use crate::tensor::Tensor;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

const MAGIC: &[u8; 4] = b"FTSH";
const VERSION: u32 = 1;
/// The largest message body a receiver accepts (64 dimensions fit).
pub const MAX_BODY: usize = 4096;

fn io_err(what: &str, e: std::io::Error) -> crate::Error {
    crate::Error::new(crate::ErrorKind::Runtime, format!("{what}: {e}"))
}

/// Encode a description as a message body (Note [Tensor messages]).
pub fn encode_meta(meta: &SharedTensorMeta) -> Vec<u8> {
    let mut b = Vec::with_capacity(64 + 16 * meta.sizes.len());
    let name = meta.dtype.name().as_bytes();
    b.push(name.len() as u8);
    b.extend_from_slice(name);
    b.extend_from_slice(&(meta.sizes.len() as u32).to_le_bytes());
    for (&n, &s) in meta.sizes.iter().zip(&meta.strides) {
        b.extend_from_slice(&(n as u64).to_le_bytes());
        b.extend_from_slice(&(s as u64).to_le_bytes());
    }
    for v in [meta.storage_offset, meta.file_offset, meta.storage_nbytes] {
        b.extend_from_slice(&(v as u64).to_le_bytes());
    }
    b.push(meta.requires_grad as u8);
    b
}

/// Decode a message body, checking every field's range.
pub fn decode_meta(body: &[u8]) -> Result<SharedTensorMeta> {
    let bad = |why: &str| {
        crate::Error::new(
            crate::ErrorKind::Runtime,
            format!("recv_tensor: malformed tensor message: {why}"),
        )
    };
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8]> {
        let s = body
            .get(at..at.checked_add(n).ok_or_else(|| bad("length overflow"))?)
            .ok_or_else(|| bad("truncated"))?;
        at += n;
        Ok(s)
    };
    let u64_of = |s: &[u8]| -> Result<usize> {
        let v = u64::from_le_bytes(s.try_into().expect("8 bytes"));
        usize::try_from(v).map_err(|_| bad("a value does not fit this machine"))
    };
    let nlen = take(1)?[0] as usize;
    let name = std::str::from_utf8(take(nlen)?).map_err(|_| bad("dtype is not text"))?;
    let dtype = DType::from_name(name).ok_or_else(|| bad(&format!("unknown dtype {name:?}")))?;
    let ndim = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
    if ndim > MAX_SHARED_DIMS {
        return Err(bad(&format!(
            "{ndim} dimensions (at most {MAX_SHARED_DIMS})"
        )));
    }
    let (mut sizes, mut strides) = (Vec::with_capacity(ndim), Vec::with_capacity(ndim));
    for _ in 0..ndim {
        sizes.push(u64_of(take(8)?)?);
        strides.push(u64_of(take(8)?)?);
    }
    let storage_offset = u64_of(take(8)?)?;
    let file_offset = u64_of(take(8)?)?;
    let storage_nbytes = u64_of(take(8)?)?;
    let requires_grad = match take(1)?[0] {
        0 => false,
        1 => true,
        _ => return Err(bad("requires_grad is not 0 or 1")),
    };
    if at != body.len() {
        return Err(bad("trailing bytes"));
    }
    Ok(SharedTensorMeta {
        dtype,
        sizes,
        strides,
        storage_offset,
        file_offset,
        storage_nbytes,
        requires_grad,
    })
}

/// Send `t` to the process at the other end of `sock`: its storage moves
/// into shared memory if it is not there yet (as PyTorch's reductions
/// do), and the other side maps the same memory.
pub fn send_tensor(sock: &UnixStream, t: &Tensor) -> Result<()> {
    let (file, meta) = t.to_shared()?;
    let body = encode_meta(&meta);
    let mut msg = Vec::with_capacity(12 + body.len());
    msg.extend_from_slice(MAGIC);
    msg.extend_from_slice(&VERSION.to_le_bytes());
    msg.extend_from_slice(&(body.len() as u32).to_le_bytes());
    msg.extend_from_slice(&body);
    let sent = send_with_fd(sock, &msg, file.fd()).map_err(|e| io_err("send_tensor", e))?;
    (&*sock)
        .write_all(&msg[sent..])
        .map_err(|e| io_err("send_tensor", e))
}

/// Receive a tensor [`send_tensor`] sent: checks the message and the
/// descriptor (Note [Tensor messages], Note [Shared memory]) and maps the
/// memory. Blocks until a message arrives; an error when the peer closes.
pub fn recv_tensor(sock: &UnixStream) -> Result<Tensor> {
    let mut head = [0u8; 12];
    let (got, fd) = recv_with_fd(sock, &mut head)?;
    if got == 0 {
        crate::bail!(
            Runtime,
            "recv_tensor: the other process closed the connection"
        );
    }
    (&*sock)
        .read_exact(&mut head[got..])
        .map_err(|e| io_err("recv_tensor", e))?;
    crate::ensure!(
        &head[..4] == MAGIC,
        Runtime,
        "recv_tensor: not a tensor message (magic {:?})",
        &head[..4]
    );
    let version = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes"));
    crate::ensure!(
        version == VERSION,
        Runtime,
        "recv_tensor: message format version {version}, this build reads {VERSION}"
    );
    let len = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes")) as usize;
    crate::ensure!(
        len <= MAX_BODY,
        Runtime,
        "recv_tensor: a message body of {len} bytes (at most {MAX_BODY})"
    );
    let mut body = vec![0u8; len];
    (&*sock)
        .read_exact(&mut body)
        .map_err(|e| io_err("recv_tensor", e))?;
    let Some(fd) = fd else {
        crate::bail!(
            Runtime,
            "recv_tensor: the message came without its shared memory descriptor"
        );
    };
    let meta = decode_meta(&body)?;
    Tensor::from_shared(SharedFile::open(fd)?, &meta)
}

/// A control buffer with room for `fds` descriptors (8-byte aligned, as
/// `cmsghdr` needs).
fn control_buffer(fds: usize) -> Vec<u64> {
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE((fds * std::mem::size_of::<RawFd>()) as u32) } as usize;
    vec![0u64; space.div_ceil(8)]
}

/// A `msghdr` over one buffer and a control buffer; both must outlive it.
fn message(iov: &mut libc::iovec, cbuf: &mut [u64]) -> libc::msghdr {
    // SAFETY: a zeroed msghdr is valid; we fill in what we use.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(cbuf) as _;
    msg
}

/// Send `data` with `fd` attached; returns how many bytes went (at least
/// one: the descriptor rides with the first byte).
pub fn send_with_fd(sock: &UnixStream, data: &[u8], fd: RawFd) -> std::io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let mut cbuf = control_buffer(1);
    let msg = message(&mut iov, &mut cbuf);
    // SAFETY: the control buffer holds one cmsg with one descriptor.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut RawFd, fd);
    }
    loop {
        // SAFETY: msg points at live buffers for the call.
        let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Receive up to `buf.len()` bytes and the descriptor riding with them, if
/// any. More than one descriptor is an error (the extras are closed); so
/// is a control message the kernel truncated because this process is out
/// of descriptors.
pub fn recv_with_fd(sock: &UnixStream, buf: &mut [u8]) -> Result<(usize, Option<OwnedFd>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // room for a few descriptors, so that extras can be seen and closed
    let mut cbuf = control_buffer(8);
    let mut msg = message(&mut iov, &mut cbuf);
    let n = loop {
        // SAFETY: msg points at live buffers for the call.
        let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 {
            break n as usize;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(io_err("recv_tensor", e));
        }
    };
    let mut fds = Vec::new();
    // SAFETY: walking the control messages recvmsg wrote.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c);
                let bytes = (*c).cmsg_len as usize - (data as usize - c as usize);
                for i in 0..bytes / std::mem::size_of::<RawFd>() {
                    let fd = std::ptr::read_unaligned((data as *const RawFd).add(i));
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        crate::bail!(
            Runtime,
            "recv_tensor: the shared memory descriptor was dropped by the kernel (this process is at its limit of open files, `ulimit -n`), so the tensor could not be received"
        );
    }
    crate::ensure!(
        fds.len() <= 1,
        Runtime,
        "recv_tensor: {} descriptors came with one message (expected 1)",
        fds.len()
    );
    Ok((n, fds.pop()))
}
