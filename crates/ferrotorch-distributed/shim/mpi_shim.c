// A C ABI over MPI (Debian's libopenmpi-dev) for ferrotorch-distributed:
// MPI_Init_thread once per process (MPI_Finalize at exit), communicators
// for groups of MPI_COMM_WORLD, and the collectives on byte buffers with a
// dtype and a reduction. Errors return (MPI_ERRORS_RETURN on every
// communicator) as a message: MPI never aborts the process from here.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ft_thread_level = -1;

static void ft_set_err(char* err, size_t errlen, const char* what, int code) {
  if (err == NULL || errlen == 0) return;
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int n = 0;
  if (code != MPI_SUCCESS && MPI_Error_string(code, msg, &n) != MPI_SUCCESS) {
    snprintf(msg, sizeof msg, "MPI error %d", code);
  }
  snprintf(err, errlen, "%s%s%s", what, code == MPI_SUCCESS ? "" : ": ", msg);
}

#define FT_CHECK(what, call)                      \
  do {                                            \
    int rc_ = (call);                             \
    if (rc_ != MPI_SUCCESS) {                     \
      ft_set_err(err, errlen, what, rc_);         \
      return -1;                                  \
    }                                             \
  } while (0)

// At exit: MPI_Finalize, which waits for every rank to finalize. A
// process exiting with an error (a Python exception, SystemExit(3)) skips
// it, so it cannot hang there waiting for ranks still in a collective:
// mpirun sees the non-zero exit and stops the whole job.
static void ft_finalize(int status, void* arg) {
  (void)arg;
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin && status == 0) MPI_Finalize();
}

#ifndef __GLIBC__
static void ft_finalize_atexit(void) { ft_finalize(0, NULL); }
#endif

// Initialise MPI once (asking for MPI_THREAD_MULTIPLE); the world's rank
// and size, and the thread level granted.
int ft_mpi_init(int* rank, int* size, int* level, char* err, size_t errlen) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (fin) {
    ft_set_err(err, errlen, "MPI was finalized in this process and cannot start again",
               MPI_SUCCESS);
    return -1;
  }
  if (!init) {
    // MPI's plugins resolve its symbols globally; a Python extension is
    // loaded RTLD_LOCAL, so reopen the library that holds MPI_Init as
    // RTLD_GLOBAL first (as mpi4py does)
    Dl_info info;
    if (dladdr((void*)&MPI_Init_thread, &info) && info.dli_fname != NULL) {
      dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    }
    int provided = 0;
    FT_CHECK("MPI_Init_thread", MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided));
    ft_thread_level = provided;
#ifdef __GLIBC__
    on_exit(ft_finalize, NULL);
#else
    atexit(ft_finalize_atexit);
#endif
  } else if (ft_thread_level < 0) {
    MPI_Query_thread(&ft_thread_level);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  FT_CHECK("MPI_Comm_rank", MPI_Comm_rank(MPI_COMM_WORLD, rank));
  FT_CHECK("MPI_Comm_size", MPI_Comm_size(MPI_COMM_WORLD, size));
  *level = ft_thread_level == MPI_THREAD_MULTIPLE ? 3 : ft_thread_level == MPI_THREAD_SERIALIZED ? 2 : ft_thread_level == MPI_THREAD_FUNNELED ? 1 : 0;
  return 0;
}

// A communicator of the world ranks `ranks` (all of the world when n is
// 0), through MPI_Comm_create_group: only those ranks call it. Its rank
// and size are written out. Freed by ft_mpi_comm_free.
MPI_Comm* ft_mpi_comm(const int* ranks, int n, int* rank, int* size, char* err, size_t errlen) {
  MPI_Comm* c = (MPI_Comm*)malloc(sizeof(MPI_Comm));
  if (c == NULL) {
    ft_set_err(err, errlen, "out of memory", MPI_SUCCESS);
    return NULL;
  }
  int rc;
  if (n == 0) {
    rc = MPI_Comm_dup(MPI_COMM_WORLD, c);
  } else {
    MPI_Group world, sub;
    rc = MPI_Comm_group(MPI_COMM_WORLD, &world);
    if (rc == MPI_SUCCESS) rc = MPI_Group_incl(world, n, ranks, &sub);
    if (rc == MPI_SUCCESS) {
      rc = MPI_Comm_create_group(MPI_COMM_WORLD, sub, 0, c);
      MPI_Group_free(&sub);
    }
    MPI_Group_free(&world);
  }
  if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(*c, rank);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_size(*c, size);
  if (rc != MPI_SUCCESS) {
    ft_set_err(err, errlen, "creating a communicator", rc);
    free(c);
    return NULL;
  }
  return c;
}

void ft_mpi_comm_free(MPI_Comm* c) {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Comm_free(c);
  free(c);
}

static MPI_Datatype ft_dtype(int code) {
  switch (code) {
    case 0: return MPI_FLOAT;
    case 1: return MPI_DOUBLE;
    case 2: return MPI_INT32_T;
    case 3: return MPI_INT64_T;
    case 4: return MPI_UINT8_T;
    case 5: return MPI_INT8_T;
  }
  return MPI_DATATYPE_NULL;
}

static MPI_Op ft_op(int code) {
  switch (code) {
    case 0: return MPI_SUM;
    case 1: return MPI_PROD;
    case 2: return MPI_MIN;
    case 3: return MPI_MAX;
  }
  return MPI_OP_NULL;
}

static const size_t ft_esize[] = {4, 8, 4, 8, 1, 1};

// MPI counts are ints: a buffer is reduced or broadcast in chunks of at
// most INT_MAX / 2 elements.
#define FT_CHUNK ((size_t)(INT_MAX / 2))

int ft_mpi_allreduce(MPI_Comm* c, void* data, size_t count, int dtype, int op, char* err,
                     size_t errlen) {
  for (size_t at = 0; at < count; at += FT_CHUNK) {
    size_t n = count - at < FT_CHUNK ? count - at : FT_CHUNK;
    FT_CHECK("MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, (char*)data + at * ft_esize[dtype],
                                            (int)n, ft_dtype(dtype), ft_op(op), *c));
  }
  return 0;
}

int ft_mpi_reduce(MPI_Comm* c, const void* in, void* out, size_t count, int dtype, int op,
                  int root, char* err, size_t errlen) {
  for (size_t at = 0; at < count; at += FT_CHUNK) {
    size_t n = count - at < FT_CHUNK ? count - at : FT_CHUNK;
    size_t off = at * ft_esize[dtype];
    FT_CHECK("MPI_Reduce", MPI_Reduce((const char*)in + off, (char*)out + off, (int)n,
                                      ft_dtype(dtype), ft_op(op), root, *c));
  }
  return 0;
}

int ft_mpi_bcast(MPI_Comm* c, void* data, size_t nbytes, int root, char* err, size_t errlen) {
  for (size_t at = 0; at < nbytes; at += FT_CHUNK) {
    size_t n = nbytes - at < FT_CHUNK ? nbytes - at : FT_CHUNK;
    FT_CHECK("MPI_Bcast", MPI_Bcast((char*)data + at, (int)n, MPI_BYTE, root, *c));
  }
  return 0;
}

// The gather-like ops move one piece per rank; a piece must fit an int.
#define FT_PIECE(nbytes)                                                          \
  do {                                                                            \
    if ((nbytes) > (size_t)INT_MAX) {                                             \
      snprintf(err, errlen, "a piece of %zu bytes per rank is over MPI's limit of %d", \
               (size_t)(nbytes), INT_MAX);                                        \
      return -1;                                                                  \
    }                                                                             \
  } while (0)

int ft_mpi_allgather(MPI_Comm* c, const void* in, void* out, size_t nbytes, char* err,
                     size_t errlen) {
  FT_PIECE(nbytes);
  FT_CHECK("MPI_Allgather",
           MPI_Allgather(in, (int)nbytes, MPI_BYTE, out, (int)nbytes, MPI_BYTE, *c));
  return 0;
}

int ft_mpi_gather(MPI_Comm* c, const void* in, void* out, size_t nbytes, int root, char* err,
                  size_t errlen) {
  FT_PIECE(nbytes);
  FT_CHECK("MPI_Gather",
           MPI_Gather(in, (int)nbytes, MPI_BYTE, out, (int)nbytes, MPI_BYTE, root, *c));
  return 0;
}

int ft_mpi_scatter(MPI_Comm* c, const void* in, void* out, size_t nbytes, int root, char* err,
                   size_t errlen) {
  FT_PIECE(nbytes);
  FT_CHECK("MPI_Scatter",
           MPI_Scatter(in, (int)nbytes, MPI_BYTE, out, (int)nbytes, MPI_BYTE, root, *c));
  return 0;
}

int ft_mpi_alltoall(MPI_Comm* c, const void* in, void* out, size_t nbytes, char* err,
                    size_t errlen) {
  FT_PIECE(nbytes);
  FT_CHECK("MPI_Alltoall",
           MPI_Alltoall(in, (int)nbytes, MPI_BYTE, out, (int)nbytes, MPI_BYTE, *c));
  return 0;
}

// uneven pieces: in_bytes[i] bytes of in go to rank i, out_bytes[i] bytes
// of out come from rank i; counts and offsets must fit MPI's ints
int ft_mpi_alltoallv(MPI_Comm* c, const void* in, const int64_t* in_bytes, void* out,
                     const int64_t* out_bytes, int n, char* err, size_t errlen) {
  int* buf = (int*)malloc(sizeof(int) * 4 * (size_t)n);
  if (buf == NULL) {
    ft_set_err(err, errlen, "out of memory", MPI_SUCCESS);
    return -1;
  }
  int *sc = buf, *sd = buf + n, *rc = buf + 2 * n, *rd = buf + 3 * n;
  int64_t sat = 0, rat = 0;
  for (int i = 0; i < n; i++) {
    if (sat > INT_MAX || rat > INT_MAX || in_bytes[i] > INT_MAX || out_bytes[i] > INT_MAX) {
      free(buf);
      snprintf(err, errlen, "all_to_all of over %d bytes is over MPI's int counts", INT_MAX);
      return -1;
    }
    sc[i] = (int)in_bytes[i];
    sd[i] = (int)sat;
    rc[i] = (int)out_bytes[i];
    rd[i] = (int)rat;
    sat += in_bytes[i];
    rat += out_bytes[i];
  }
  int rc_ = MPI_Alltoallv(in, sc, sd, MPI_BYTE, out, rc, rd, MPI_BYTE, *c);
  free(buf);
  if (rc_ != MPI_SUCCESS) {
    ft_set_err(err, errlen, "MPI_Alltoallv", rc_);
    return -1;
  }
  return 0;
}

// The largest tag this MPI carries (MPI_TAG_UB, at least 32767).
int ft_mpi_tag_ub(void) {
  int* ub = NULL;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  return flag && ub ? *ub : 32767;
}

int ft_mpi_send(MPI_Comm* c, const void* data, size_t nbytes, int dst, int tag, char* err,
                size_t errlen) {
  FT_PIECE(nbytes);
  FT_CHECK("MPI_Send", MPI_Send(data, (int)nbytes, MPI_BYTE, dst, tag, *c));
  return 0;
}

int ft_mpi_recv(MPI_Comm* c, void* data, size_t nbytes, int src, int tag, char* err,
                size_t errlen) {
  FT_PIECE(nbytes);
  MPI_Status st;
  FT_CHECK("MPI_Recv", MPI_Recv(data, (int)nbytes, MPI_BYTE, src, tag, *c, &st));
  int got = 0;
  MPI_Get_count(&st, MPI_BYTE, &got);
  if ((size_t)got != nbytes) {
    snprintf(err, errlen, "received %d bytes where %zu were expected (the sender's tensor differs)",
             got, nbytes);
    return -1;
  }
  return 0;
}

int ft_mpi_barrier(MPI_Comm* c, char* err, size_t errlen) {
  FT_CHECK("MPI_Barrier", MPI_Barrier(*c));
  return 0;
}

// The job ends: every rank of MPI_COMM_WORLD exits with `code` (the
// watchdog's last resort for a call another rank never joins).
void ft_mpi_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }
