//! Shared memory and tensors between processes (Note [Shared memory],
//! Note [Tensor messages], Note [Fork safety]): `share_memory_` in place,
//! a child process that maps the same memory (this test binary run again
//! with one test selected), hostile messages and descriptors, many live
//! shared tensors, and fork.

use ferrotorch_core::multiprocessing::{
    decode_meta, encode_meta, recv_tensor, recv_with_fd, send_tensor, send_with_fd,
};
use ferrotorch_core::storage::shared::SharedFile;
use ferrotorch_core::tensor::shared::SharedTensorMeta;
use ferrotorch_core::{DType, Tensor};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::Command;

fn ar(n: i64) -> Tensor {
    Tensor::arange(0, n, 1, DType::F32).unwrap()
}

fn f(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

#[test]
fn share_memory_is_in_place_for_every_view() {
    let a = ar(12).reshape(&[3, 4]).unwrap();
    let v = a.transpose(0, 1).unwrap().narrow(0, 1, 2).unwrap();
    let w = a.requires_grad_(false).unwrap().view(&[12]).unwrap();
    let before = a.data_ptr();
    let version = a.version();
    assert!(!a.is_shared() && !v.is_shared());
    a.share_memory_().unwrap();
    assert!(a.is_shared() && v.is_shared() && w.is_shared());
    assert_ne!(a.data_ptr(), before, "the storage moved");
    assert_eq!(a.version(), version, "moving changes no values");
    assert_eq!(f(&a), (0..12).map(|x| x as f32).collect::<Vec<_>>());
    assert_eq!(f(&v), [1.0, 5.0, 9.0, 2.0, 6.0, 10.0]);
    v.fill_(-1.0).unwrap();
    assert_eq!(f(&w)[1], -1.0, "views still alias after the move");
    let (file, off) = a.storage().shared_file().unwrap();
    assert_eq!(
        a.storage().data_ptr() as usize,
        file.base().as_ptr() as usize + off
    );
    // sharing again is a no-op; shared storage is not resizable
    a.share_memory_().unwrap();
    assert_eq!(a.storage().shared_file().unwrap().1, off);
    assert!(!a.storage().resizable());
}

#[test]
fn share_memory_keeps_gradients_and_saved_tensors_valid() {
    let x = ar(4).requires_grad_(true).unwrap();
    let y = x.mul(&x).unwrap().sum().unwrap();
    x.share_memory_().unwrap();
    y.backward().unwrap();
    assert_eq!(f(&x.grad().unwrap()), [0.0, 2.0, 4.0, 6.0]);
}

#[test]
fn an_exported_buffer_outlives_the_move() {
    let a = ar(1024);
    a.storage().mark_exported();
    let old = a.data_ptr() as *const f32;
    a.share_memory_().unwrap();
    a.fill_(7.0).unwrap();
    // foreign code holding the old address still reads valid memory,
    // with the values as of the move
    let seen = unsafe { std::slice::from_raw_parts(old, 1024) };
    assert_eq!(seen[1023], 1023.0);
    assert_eq!(f(&a)[1023], 7.0);
}

#[test]
fn read_only_storage_does_not_move() {
    let buf: &'static [f32] = Box::leak(vec![1.0f32; 4].into_boxed_slice());
    let p = std::ptr::NonNull::new(buf.as_ptr() as *mut u8).unwrap();
    let s = unsafe { ferrotorch_core::storage::Storage::from_external_readonly(p, 16, || {}) };
    let layout = ferrotorch_core::tensor::Layout::contiguous("t", &[4]).unwrap();
    let t = Tensor::from_storage(s, layout, DType::F32).unwrap();
    let e = t.share_memory_().unwrap_err();
    assert!(e.to_string().contains("read-only"), "{e}");
}

#[test]
fn messages_round_trip_and_hostile_ones_are_refused() {
    let meta = SharedTensorMeta {
        dtype: DType::F64,
        sizes: vec![2, 3],
        strides: vec![1, 2],
        storage_offset: 1,
        file_offset: 64,
        storage_nbytes: 56,
        requires_grad: true,
    };
    let body = encode_meta(&meta);
    assert_eq!(decode_meta(&body).unwrap(), meta);
    for cut in 0..body.len() {
        let e = decode_meta(&body[..cut]).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
    }
    let mut long = body.clone();
    long.push(0);
    assert!(decode_meta(&long)
        .unwrap_err()
        .to_string()
        .contains("trailing"));
    let mut bad_grad = body.clone();
    *bad_grad.last_mut().unwrap() = 7;
    assert!(decode_meta(&bad_grad).is_err());
    let mut bad_dtype = body.clone();
    bad_dtype[1] = b'x';
    assert!(decode_meta(&bad_dtype)
        .unwrap_err()
        .to_string()
        .contains("dtype"));
    let mut dims = body.clone();
    let at = 1 + body[0] as usize;
    dims[at..at + 4].copy_from_slice(&1_000_000u32.to_le_bytes());
    assert!(decode_meta(&dims)
        .unwrap_err()
        .to_string()
        .contains("dimensions"));

    // descriptions that do not fit their file
    let file = SharedFile::create(4096).unwrap();
    let fits = |m: &SharedTensorMeta| Tensor::from_shared(file.clone(), m);
    let mut m = meta.clone();
    m.requires_grad = false;
    assert_eq!(fits(&m).unwrap().shape(), [2, 3]);
    m.file_offset = 4096;
    assert!(fits(&m).unwrap_err().to_string().contains("does not fit"));
    m.file_offset = usize::MAX - 8;
    assert!(fits(&m).is_err());
    m.file_offset = 3;
    assert!(fits(&m).unwrap_err().to_string().contains("aligned"));
    m.file_offset = 0;
    m.sizes = vec![100, 3];
    assert!(fits(&m).unwrap_err().to_string().contains("out of bounds"));
    m.sizes = vec![usize::MAX, usize::MAX];
    assert!(fits(&m).is_err());
    // bool bytes other than 0 and 1 are refused
    let four_bytes = |dtype| SharedTensorMeta {
        dtype,
        sizes: vec![4],
        strides: vec![1],
        storage_offset: 0,
        file_offset: 0,
        storage_nbytes: 4,
        requires_grad: false,
    };
    let b = Tensor::from_shared(file.clone(), &four_bytes(DType::U8)).unwrap();
    b.fill_(2).unwrap();
    let e = Tensor::from_shared(file, &four_bytes(DType::Bool)).unwrap_err();
    assert!(e.to_string().contains("bool"), "{e}");
}

#[test]
fn descriptors_that_are_not_sealed_shared_files_are_refused() {
    // a pipe
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (r, _w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let e = SharedFile::open(r).unwrap_err();
    assert!(e.to_string().contains("not a shared memory file"), "{e}");
    // a memfd a peer could still shrink under our mapping
    let fd = unsafe { libc::memfd_create(c"unsealed".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0);
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    assert_eq!(unsafe { libc::ftruncate(fd.as_raw_fd(), 4096) }, 0);
    let e = SharedFile::open(fd).unwrap_err();
    assert!(e.to_string().contains("sealed"), "{e}");
}

#[test]
fn a_socket_message_without_its_descriptor_or_with_two_is_refused() {
    let (a, b) = UnixStream::pair().unwrap();
    let t = ar(8);
    let (file, meta) = t.to_shared().unwrap();
    let body = encode_meta(&meta);
    let mut msg = b"FTSH".to_vec();
    msg.extend_from_slice(&1u32.to_le_bytes());
    msg.extend_from_slice(&(body.len() as u32).to_le_bytes());
    msg.extend_from_slice(&body);
    // no descriptor
    use std::io::Write;
    (&a).write_all(&msg).unwrap();
    let e = recv_tensor(&b).unwrap_err();
    assert!(e.to_string().contains("without"), "{e}");
    // the right one: it arrives and aliases the sender's memory
    let n = send_with_fd(&a, &msg, file.fd()).unwrap();
    (&a).write_all(&msg[n..]).unwrap();
    let got = recv_tensor(&b).unwrap();
    got.fill_(3.0).unwrap();
    assert_eq!(f(&t), [3.0; 8]);
    // a wrong magic, and a body that claims to be huge (a stream that
    // carried a bad message is not read further: fresh pairs)
    let mut bad = msg.clone();
    bad[0] = b'X';
    let (a2, b2) = UnixStream::pair().unwrap();
    send_with_fd(&a2, &bad, file.fd()).unwrap();
    assert!(recv_tensor(&b2).unwrap_err().to_string().contains("magic"));
    let mut big = msg[..12].to_vec();
    big[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    let (a3, b3) = UnixStream::pair().unwrap();
    send_with_fd(&a3, &big, file.fd()).unwrap();
    assert!(recv_tensor(&b3)
        .unwrap_err()
        .to_string()
        .contains("at most"));
    // a closed peer is an error, not a hang
    drop(a);
    let mut buf = [0u8; 4];
    assert_eq!(recv_with_fd(&b, &mut buf).unwrap().0, 0);
    assert!(recv_tensor(&b).unwrap_err().to_string().contains("closed"));
}

/// Run this binary again with only `test` selected, the child end of a
/// socket pair as its descriptor 3.
fn child(test: &str, sock: &UnixStream) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let fd = sock.as_raw_fd();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env("FT_SHM_CHILD", "1");
    // SAFETY: dup2 is async-signal-safe; it runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let r = if fd == 3 {
                libc::fcntl(3, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, 3)
            };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn().unwrap()
}

fn child_socket() -> Option<UnixStream> {
    std::env::var_os("FT_SHM_CHILD")?;
    // SAFETY: descriptor 3 is the socket the parent placed there.
    Some(unsafe { UnixStream::from_raw_fd(3) })
}

#[test]
fn child_adds_one_and_answers() {
    let Some(sock) = child_socket() else { return };
    let t = recv_tensor(&sock).unwrap();
    t.add_(1.0).unwrap();
    let made = Tensor::full(&[3], 42.0, DType::F64).unwrap();
    send_tensor(&sock, &made).unwrap();
    // wait until the parent has written into `made`, then check it here
    let again = recv_tensor(&sock).unwrap();
    assert_eq!(again.to_vec::<f64>().unwrap(), [-1.0, 42.0, 42.0]);
    assert_eq!(made.to_vec::<f64>().unwrap(), [-1.0, 42.0, 42.0]);
}

#[test]
fn a_tensor_sent_to_another_process_shares_its_memory() {
    if child_socket().is_some() {
        return;
    }
    let (ours, theirs) = UnixStream::pair().unwrap();
    let mut kid = child("shared_memory::child_adds_one_and_answers", &theirs);
    drop(theirs);
    let t = ar(6).reshape(&[2, 3]).unwrap().transpose(0, 1).unwrap();
    send_tensor(&ours, &t).unwrap();
    assert!(
        t.is_shared(),
        "sending moves the storage into shared memory"
    );
    let made = recv_tensor(&ours).unwrap();
    // the child's write to our tensor is visible here
    assert_eq!(f(&t), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    made.narrow(0, 0, 1).unwrap().fill_(-1.0).unwrap();
    send_tensor(&ours, &made).unwrap();
    let status = kid.wait().unwrap();
    assert!(status.success(), "the child failed: {status}");
}

#[test]
fn a_hundred_thousand_shared_tensors_hold_few_descriptors_and_maps() {
    fn count(path: &str) -> usize {
        match std::fs::read_dir(path) {
            Ok(d) => d.count(),
            Err(_) => std::fs::read_to_string(path).map_or(0, |s| s.lines().count()),
        }
    }
    let (fds0, maps0) = (count("/proc/self/fd"), count("/proc/self/maps"));
    let n = 100_000;
    let ts: Vec<Tensor> = (0..n)
        .map(|i| {
            let t = Tensor::full(&[16], i as f32, DType::F32).unwrap();
            t.share_memory_().unwrap();
            t
        })
        .collect();
    let (fds1, maps1) = (count("/proc/self/fd"), count("/proc/self/maps"));
    // 100,000 × 64 bytes lie in a few 4 MiB arenas (other tests may add a few)
    assert!(fds1 - fds0.min(fds1) < 1000, "{fds0} -> {fds1} descriptors");
    assert!(
        maps1 - maps0.min(maps1) < 1000,
        "{maps0} -> {maps1} mappings"
    );
    assert_eq!(f(&ts[n - 1])[15], (n - 1) as f32);
}

#[test]
fn a_forked_child_carves_its_own_arena_and_runs_parallel_ops() {
    // start an arena and the thread pool in this process
    let first = Tensor::zeros(&[4], DType::F32).unwrap();
    first.share_memory_().unwrap();
    let big = Tensor::ones(&[1 << 20], DType::F32).unwrap();
    assert_eq!(big.sum().unwrap().item_f64().unwrap(), (1 << 20) as f64);
    let mut go = [0; 2];
    assert_eq!(unsafe { libc::pipe(go.as_mut_ptr()) }, 0);
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // the child: wait for the parent's write, then carve a small shared
        // tensor and fill it; a parallel op and a random draw must not hang
        let mut byte = [0u8];
        unsafe { libc::read(go[0], byte.as_mut_ptr().cast(), 1) };
        let mine = Tensor::zeros(&[4], DType::F32).unwrap();
        let ok = mine.share_memory_().is_ok()
            && mine.fill_(7.0).is_ok()
            && big.mul(&big).and_then(|x| x.sum()).is_ok()
            && Tensor::rand(&[8], DType::F32).is_ok();
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let ours = Tensor::zeros(&[4], DType::F32).unwrap();
    ours.share_memory_().unwrap();
    ours.fill_(5.0).unwrap();
    assert_eq!(unsafe { libc::write(go[1], [1u8].as_ptr().cast(), 1) }, 1);
    let mut status = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        if std::time::Instant::now() > deadline {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the forked child hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    unsafe {
        libc::close(go[0]);
        libc::close(go[1]);
    }
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    // the child's tensor did not land on ours
    assert_eq!(f(&ours), [5.0; 4]);
}
