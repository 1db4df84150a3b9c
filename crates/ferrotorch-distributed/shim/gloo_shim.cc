// A C ABI over Gloo (Debian's libgloo-dev) for ferrotorch-distributed:
// a context connected through a store the Rust side implements (callbacks),
// over Gloo's TCP transport, and the collectives on byte buffers with a
// dtype and a reduction. Every Gloo exception is caught here and returned
// as a message: nothing is thrown across the C boundary.

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" {

// The store, as callbacks into Rust. Each returns 0 on success, else
// writes a message to err (NUL-terminated, at most errlen bytes).
struct ft_store_vtable {
  void* self;
  int (*set)(void* self, const char* key, size_t klen, const uint8_t* value, size_t vlen,
             char* err, size_t errlen);
  // the value is written to a buffer Rust allocates; free_value releases it
  int (*get)(void* self, const char* key, size_t klen, uint8_t** value, size_t* vlen,
             char* err, size_t errlen);
  void (*free_value)(uint8_t* value, size_t vlen);
  int (*wait)(void* self, const char* const* keys, const size_t* klens, size_t n,
              int64_t timeout_ms, char* err, size_t errlen);
};

struct ft_gloo_ctx;
}

namespace {

void set_err(char* err, size_t errlen, const char* msg) {
  if (err == nullptr || errlen == 0) return;
  std::strncpy(err, msg, errlen - 1);
  err[errlen - 1] = '\0';
}

class RustStore : public gloo::rendezvous::Store {
 public:
  explicit RustStore(ft_store_vtable vt) : vt_(vt) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    char err[512] = {0};
    if (vt_.set(vt_.self, key.data(), key.size(), reinterpret_cast<const uint8_t*>(data.data()),
                data.size(), err, sizeof err) != 0) {
      throw std::runtime_error(err);
    }
  }

  std::vector<char> get(const std::string& key) override {
    char err[512] = {0};
    uint8_t* v = nullptr;
    size_t n = 0;
    if (vt_.get(vt_.self, key.data(), key.size(), &v, &n, err, sizeof err) != 0) {
      throw std::runtime_error(err);
    }
    std::vector<char> out(reinterpret_cast<char*>(v), reinterpret_cast<char*>(v) + n);
    vt_.free_value(v, n);
    return out;
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, kDefaultTimeout); }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    for (const auto& k : keys) {
      ptrs.push_back(k.data());
      lens.push_back(k.size());
    }
    char err[512] = {0};
    if (vt_.wait(vt_.self, ptrs.data(), lens.data(), keys.size(), timeout.count(), err,
                 sizeof err) != 0) {
      throw std::runtime_error(err);
    }
  }

 private:
  ft_store_vtable vt_;
};

// Note [Gloo's yielding destructor]
// A Gloo call ends by destroying its unbound buffers, and the destructor
// spins on sched_yield() until Gloo's I/O thread has let go of them. The
// I/O thread lets go just after it wakes the caller — but the woken caller
// preempts it (CFS's wake-up preemption) and, when both share a core,
// spins out its whole time slice (~4 ms) before the I/O thread runs again:
// a 1.6 MB all-reduce took 7.5 ms instead of 1.5 with a rank's threads on
// one core, and DDP's bucket all-reduces paid it while backward held the
// other core. For the length of each call the calling thread is
// SCHED_BATCH — a normal-priority policy any thread may take, whose
// wake-ups never preempt — so the I/O thread finishes first; its own
// policy is put back on return (a real-time caller is left alone).
class NoWakeupPreemption {
 public:
  // the kernel's calls on this thread (0), not pthread_*schedparam, whose
  // cached policy misses a change made by the kernel's calls elsewhere
  NoWakeupPreemption() {
    policy_ = sched_getscheduler(0);
    if (policy_ == SCHED_OTHER && sched_getparam(0, &param_) == 0) {
      sched_param batch{};
      changed_ = sched_setscheduler(0, SCHED_BATCH, &batch) == 0;
    }
  }
  ~NoWakeupPreemption() {
    if (changed_) sched_setscheduler(0, policy_, &param_);
  }
  NoWakeupPreemption(const NoWakeupPreemption&) = delete;
  NoWakeupPreemption& operator=(const NoWakeupPreemption&) = delete;

 private:
  int policy_ = 0;
  sched_param param_{};
  bool changed_ = false;
};

template <typename T>
gloo::AllreduceOptions::Func reduce_fn(int op) {
  using F = void (*)(void*, const void*, const void*, size_t);
  switch (op) {
    case 0: return static_cast<F>(&gloo::sum<T>);
    case 1: return static_cast<F>(&gloo::product<T>);
    case 2: return static_cast<F>(&gloo::min<T>);
    case 3: return static_cast<F>(&gloo::max<T>);
  }
  throw std::invalid_argument("unknown reduction");
}

template <typename T>
void reduce_as(const std::shared_ptr<gloo::Context>& ctx, const void* in, void* out, size_t count,
               int op, int root, std::chrono::milliseconds timeout) {
  gloo::ReduceOptions opts(ctx);
  opts.setInput(const_cast<T*>(static_cast<const T*>(in)), count);
  opts.setOutput(static_cast<T*>(out), count);
  opts.setReduceFunction(reduce_fn<T>(op));
  opts.setRoot(root);
  opts.setTimeout(timeout);
  gloo::reduce(opts);
}

template <typename T>
void allreduce_as(const std::shared_ptr<gloo::Context>& ctx, void* data, size_t count, int op,
                  std::chrono::milliseconds timeout) {
  gloo::AllreduceOptions opts(ctx);
  opts.setOutput(static_cast<T*>(data), count);
  opts.setReduceFunction(reduce_fn<T>(op));
  opts.setTimeout(timeout);
  gloo::allreduce(opts);
}

// A call's fingerprint (its fields' maximum and minimum over the ranks)
// and, for a small all-reduce, the data itself: one element of Gloo's
// all-reduce with a reduction of our own record type, so comparing the
// ranks' calls costs no collective beyond the one they make (Note
// [Collective fingerprints] in group.rs).
constexpr size_t kFingerprintFields = 7;
constexpr size_t kInlineBytes = 256;
struct Agreement {
  int64_t hi[kFingerprintFields];
  int64_t lo[kFingerprintFields];
  alignas(8) uint8_t data[kInlineBytes];
};

size_t elem_size(int dtype) {
  switch (dtype) {
    case 0: case 2: return 4;
    case 1: case 3: return 8;
    case 4: case 5: return 1;
  }
  throw std::invalid_argument("unknown dtype");
}

gloo::AllreduceOptions::Func reduce_any(int dtype, int op) {
  switch (dtype) {
    case 0: return reduce_fn<float>(op);
    case 1: return reduce_fn<double>(op);
    case 2: return reduce_fn<int32_t>(op);
    case 3: return reduce_fn<int64_t>(op);
    case 4: return reduce_fn<uint8_t>(op);
    case 5: return reduce_fn<int8_t>(op);
  }
  throw std::invalid_argument("unknown dtype");
}

}  // namespace

struct ft_gloo_ctx {
  std::shared_ptr<gloo::rendezvous::Context> ctx;
  std::chrono::milliseconds timeout;
};

extern "C" {

ft_gloo_ctx* ft_gloo_connect(ft_store_vtable store, int rank, int size, const char* hostname,
                             int64_t timeout_ms, char* err, size_t errlen) {
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = hostname;
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    RustStore rs(store);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
    ctx->setTimeout(std::chrono::milliseconds(timeout_ms));
    ctx->connectFullMesh(rs, dev);
    // returned only once every rank is connected: a group dropped at once
    // must not close a pair a peer is still connecting
    gloo::BarrierOptions ready(ctx);
    ready.setTimeout(std::chrono::milliseconds(timeout_ms));
    gloo::barrier(ready);
    return new ft_gloo_ctx{ctx, std::chrono::milliseconds(timeout_ms)};
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return nullptr;
  }
}

void ft_gloo_free(ft_gloo_ctx* c) { delete c; }

// dtype: 0 f32, 1 f64, 2 i32, 3 i64, 4 u8, 5 i8; op: 0 sum, 1 product,
// 2 min, 3 max
int ft_gloo_allreduce(ft_gloo_ctx* c, void* data, size_t count, int dtype, int op, char* err,
                      size_t errlen) {
  NoWakeupPreemption batch;
  try {
    switch (dtype) {
      case 0: allreduce_as<float>(c->ctx, data, count, op, c->timeout); break;
      case 1: allreduce_as<double>(c->ctx, data, count, op, c->timeout); break;
      case 2: allreduce_as<int32_t>(c->ctx, data, count, op, c->timeout); break;
      case 3: allreduce_as<int64_t>(c->ctx, data, count, op, c->timeout); break;
      case 4: allreduce_as<uint8_t>(c->ctx, data, count, op, c->timeout); break;
      case 5: allreduce_as<int8_t>(c->ctx, data, count, op, c->timeout); break;
      default: throw std::invalid_argument("unknown dtype");
    }
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return -1;
  }
}

// Every rank's fingerprint `fp` (`fields` values) compared in one
// all-reduce that also all-reduces `data` (`nbytes`, at most 256; none when
// 0) by `op` in `dtype`; *agreed says whether every rank's fingerprint
// equalled this one (the data is written back only then).
int ft_gloo_agree(ft_gloo_ctx* c, const int64_t* fp, size_t fields, void* data, size_t nbytes,
                  int dtype, int op, int* agreed, char* err, size_t errlen) {
  NoWakeupPreemption batch;
  try {
    if (fields != kFingerprintFields) throw std::invalid_argument("fingerprint fields");
    if (nbytes > kInlineBytes) throw std::invalid_argument("inline data over 256 bytes");
    Agreement rec;
    std::memset(&rec, 0, sizeof rec);
    for (size_t k = 0; k < fields; k++) rec.hi[k] = rec.lo[k] = fp[k];
    gloo::AllreduceOptions::Func payload;
    size_t count = 0;
    if (nbytes > 0) {
      std::memcpy(rec.data, data, nbytes);
      payload = reduce_any(dtype, op);
      count = nbytes / elem_size(dtype);
    }
    gloo::AllreduceOptions opts(c->ctx);
    opts.setOutput(&rec, 1);
    opts.setReduceFunction([payload, count](void* out, const void* a, const void* b, size_t n) {
      auto* o = static_cast<Agreement*>(out);
      auto* x = static_cast<const Agreement*>(a);
      auto* y = static_cast<const Agreement*>(b);
      for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < kFingerprintFields; k++) {
          o[i].hi[k] = std::max(x[i].hi[k], y[i].hi[k]);
          o[i].lo[k] = std::min(x[i].lo[k], y[i].lo[k]);
        }
        if (count > 0) payload(o[i].data, x[i].data, y[i].data, count);
      }
    });
    opts.setTimeout(c->timeout);
    gloo::allreduce(opts);
    bool same = true;
    for (size_t k = 0; k < fields; k++) same = same && rec.hi[k] == fp[k] && rec.lo[k] == fp[k];
    if (same && nbytes > 0) std::memcpy(data, rec.data, nbytes);
    *agreed = same ? 1 : 0;
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return -1;
  }
}

int ft_gloo_reduce(ft_gloo_ctx* c, const void* in, void* out, size_t count, int dtype, int op,
                   int root, char* err, size_t errlen) {
  NoWakeupPreemption batch;
  try {
    switch (dtype) {
      case 0: reduce_as<float>(c->ctx, in, out, count, op, root, c->timeout); break;
      case 1: reduce_as<double>(c->ctx, in, out, count, op, root, c->timeout); break;
      case 2: reduce_as<int32_t>(c->ctx, in, out, count, op, root, c->timeout); break;
      case 3: reduce_as<int64_t>(c->ctx, in, out, count, op, root, c->timeout); break;
      case 4: reduce_as<uint8_t>(c->ctx, in, out, count, op, root, c->timeout); break;
      case 5: reduce_as<int8_t>(c->ctx, in, out, count, op, root, c->timeout); break;
      default: throw std::invalid_argument("unknown dtype");
    }
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return -1;
  }
}

// out (root only) holds size * nbytes: every rank's input in rank order
int ft_gloo_gather(ft_gloo_ctx* c, const void* in, void* out, size_t nbytes, int root, char* err,
                   size_t errlen) {
  NoWakeupPreemption batch;
  try {
    gloo::GatherOptions opts(c->ctx);
    opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), nbytes);
    if (c->ctx->rank == root) opts.setOutput(static_cast<uint8_t*>(out), nbytes * c->ctx->size);
    opts.setRoot(root);
    opts.setTimeout(c->timeout);
    gloo::gather(opts);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return -1;
  }
}

// in (root only) holds size * nbytes: rank i gets the i-th piece
int ft_gloo_scatter(ft_gloo_ctx* c, const void* in, void* out, size_t nbytes, int root, char* err,
                    size_t errlen) {
  NoWakeupPreemption batch;
  try {
    gloo::ScatterOptions opts(c->ctx);
    std::vector<uint8_t*> pieces;
    if (c->ctx->rank == root) {
      for (int i = 0; i < c->ctx->size; i++) {
        pieces.push_back(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)) + i * nbytes);
      }
      opts.setInputs(pieces, nbytes);
    }
    opts.setOutput(static_cast<uint8_t*>(out), nbytes);
    opts.setRoot(root);
    opts.setTimeout(c->timeout);
    gloo::scatter(opts);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return -1;
  }
}

// uneven pieces: in_bytes[i] bytes of in go to rank i, out_bytes[i]
// bytes of out come from rank i (size entries each)
int ft_gloo_alltoallv(ft_gloo_ctx* c, const void* in, const int64_t* in_bytes, void* out,
                      const int64_t* out_bytes, char* err, size_t errlen) {
  NoWakeupPreemption batch;
  try {
    const int n = c->ctx->size;
    gloo::AlltoallvOptions opts(c->ctx);
    opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)),
                  std::vector<int64_t>(in_bytes, in_bytes + n));
    opts.setOutput(static_cast<uint8_t*>(out), std::vector<int64_t>(out_bytes, out_bytes + n));
    opts.setTimeout(c->timeout);
    gloo::alltoallv(opts);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return -1;
  }
}

// in and out hold size * nbytes: piece i goes to rank i
int ft_gloo_alltoall(ft_gloo_ctx* c, const void* in, void* out, size_t nbytes, char* err,
                     size_t errlen) {
  NoWakeupPreemption batch;
  try {
    gloo::AlltoallOptions opts(c->ctx);
    opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), nbytes * c->ctx->size);
    opts.setOutput(static_cast<uint8_t*>(out), nbytes * c->ctx->size);
    opts.setTimeout(c->timeout);
    gloo::alltoall(opts);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return -1;
  }
}

// point to point: `tag` pairs a send with its recv (torch's tag)
int ft_gloo_send(ft_gloo_ctx* c, const void* data, size_t nbytes, int dst, uint64_t tag, char* err,
                 size_t errlen) {
  NoWakeupPreemption batch;
  try {
    auto buf = c->ctx->createUnboundBuffer(const_cast<void*>(data), nbytes);
    buf->send(dst, tag);
    if (!buf->waitSend(c->timeout)) throw std::runtime_error("send timed out");
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return -1;
  }
}

int ft_gloo_recv(ft_gloo_ctx* c, void* data, size_t nbytes, int src, uint64_t tag, char* err,
                 size_t errlen) {
  NoWakeupPreemption batch;
  try {
    auto buf = c->ctx->createUnboundBuffer(data, nbytes);
    buf->recv(src, tag);
    if (!buf->waitRecv(c->timeout)) throw std::runtime_error("recv timed out");
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return -1;
  }
}

int ft_gloo_broadcast(ft_gloo_ctx* c, void* data, size_t nbytes, int root, char* err,
                      size_t errlen) {
  NoWakeupPreemption batch;
  try {
    gloo::BroadcastOptions opts(c->ctx);
    opts.setOutput(static_cast<uint8_t*>(data), nbytes);
    opts.setRoot(root);
    opts.setTimeout(c->timeout);
    gloo::broadcast(opts);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return -1;
  }
}

int ft_gloo_allgather(ft_gloo_ctx* c, const void* in, void* out, size_t nbytes, char* err,
                      size_t errlen) {
  NoWakeupPreemption batch;
  try {
    gloo::AllgatherOptions opts(c->ctx);
    opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), nbytes);
    opts.setOutput(static_cast<uint8_t*>(out), nbytes * c->ctx->size);
    opts.setTimeout(c->timeout);
    gloo::allgather(opts);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return -1;
  }
}

int ft_gloo_barrier(ft_gloo_ctx* c, char* err, size_t errlen) {
  NoWakeupPreemption batch;
  try {
    gloo::BarrierOptions opts(c->ctx);
    opts.setTimeout(c->timeout);
    gloo::barrier(opts);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, e.what());
    return -1;
  }
}

}  // extern "C"
