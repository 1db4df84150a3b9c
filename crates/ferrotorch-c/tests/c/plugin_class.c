/*
 * A ferrotorch plugin defining a custom class in C (Note [Plugin
 * classes]): seeds/004's TensorQueue, registered when
 * torch.classes.load_library / ferrotorch_capi::plugin::load_library loads
 * this file.
 *
 *   ftplugin::TensorQueue(Tensor init)
 *       push(Tensor x) -> ()      at the back
 *       pop() -> Tensor           the front, or `init` when empty
 *       top() -> Tensor           the front without removing it, or `init`
 *       size() -> int
 *       get_raw_queue() -> Tensor[]
 *       saved and copied as Tensor[]: init, then the queue
 *
 * The queue holds its own references to the tensors (ft_tensor_clone of
 * the borrowed arguments) and a mutex: methods may run on any thread.
 */
#include <pthread.h>
#include <stdlib.h>

#include "ferrotorch.h"

static __typeof__(ft_set_error) *set_error;
static __typeof__(ft_class_def) *class_def;
static __typeof__(ft_class_def_init) *class_def_init;
static __typeof__(ft_class_def_method) *class_def_method;
static __typeof__(ft_class_def_pickle) *class_def_pickle;
static __typeof__(ft_alloc) *alloc;
static __typeof__(ft_tensor_clone) *tensor_clone;
static __typeof__(ft_tensor_free) *tensor_free;

typedef struct {
    pthread_mutex_t mu;
    FtTensor *init;
    FtTensor **items;
    size_t head, n, cap; /* items[head .. head + n) */
} Queue;

static const char *NAME = "ftplugin::TensorQueue";

static void queue_free(void *state) {
    Queue *q = state;
    if (!q)
        return;
    for (size_t i = 0; i < q->n; i++)
        tensor_free(q->items[q->head + i]);
    if (q->init)
        tensor_free(q->init);
    free(q->items);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

static Queue *queue_new(const FtTensor *init) {
    Queue *q = calloc(1, sizeof(Queue));
    if (!q)
        return NULL;
    pthread_mutex_init(&q->mu, NULL);
    if (tensor_clone(init, &q->init) != FT_OK) {
        queue_free(q);
        return NULL;
    }
    return q;
}

/* append a new reference to t; 0 on failure (message set) */
static int queue_push(Queue *q, const FtTensor *t) {
    if (q->head + q->n == q->cap) {
        if (q->head > 0) { /* slide to the front first */
            for (size_t i = 0; i < q->n; i++)
                q->items[i] = q->items[q->head + i];
            q->head = 0;
        }
        if (q->n == q->cap) {
            size_t cap = q->cap ? 2 * q->cap : 8;
            FtTensor **items = realloc(q->items, cap * sizeof(FtTensor *));
            if (!items) {
                set_error("TensorQueue: out of memory");
                return 0;
            }
            q->items = items;
            q->cap = cap;
        }
    }
    FtTensor *own;
    if (tensor_clone(t, &own) != FT_OK)
        return 0;
    q->items[q->head + q->n++] = own;
    return 1;
}

static FtStatus init(void *user_data, const FtValue *args, size_t nargs, void **state) {
    (void)user_data;
    if (nargs != 1 || args[0].tag != FT_TAG_TENSOR) {
        set_error("TensorQueue(init): expected one tensor");
        return FT_ERROR_TYPE;
    }
    Queue *q = queue_new(args[0].tensor);
    if (!q)
        return FT_ERROR_RUNTIME;
    *state = q;
    return FT_OK;
}

static FtStatus push(void *user_data, void *state, const FtValue *args, size_t nargs, FtValue *result) {
    (void)user_data;
    (void)nargs;
    (void)result;
    Queue *q = state;
    pthread_mutex_lock(&q->mu);
    int ok = queue_push(q, args[0].tensor);
    pthread_mutex_unlock(&q->mu);
    return ok ? FT_OK : FT_ERROR_RUNTIME;
}

/* the front (removed when `take`), or init: a new handle in *result */
static FtStatus front(Queue *q, int take, FtValue *result) {
    pthread_mutex_lock(&q->mu);
    FtStatus s = FT_OK;
    FtTensor *out = NULL;
    if (q->n == 0) {
        s = tensor_clone(q->init, &out);
    } else if (take) {
        out = q->items[q->head++];
        if (--q->n == 0)
            q->head = 0;
    } else {
        s = tensor_clone(q->items[q->head], &out);
    }
    pthread_mutex_unlock(&q->mu);
    if (s == FT_OK) {
        result->tag = FT_TAG_TENSOR;
        result->tensor = out;
    }
    return s;
}

static FtStatus pop(void *user_data, void *state, const FtValue *args, size_t nargs, FtValue *result) {
    (void)user_data;
    (void)args;
    (void)nargs;
    return front(state, 1, result);
}

static FtStatus top(void *user_data, void *state, const FtValue *args, size_t nargs, FtValue *result) {
    (void)user_data;
    (void)args;
    (void)nargs;
    return front(state, 0, result);
}

static FtStatus size(void *user_data, void *state, const FtValue *args, size_t nargs, FtValue *result) {
    (void)user_data;
    (void)args;
    (void)nargs;
    Queue *q = state;
    pthread_mutex_lock(&q->mu);
    result->tag = FT_TAG_INT;
    result->i = (int64_t)q->n;
    pthread_mutex_unlock(&q->mu);
    return FT_OK;
}

/* new references to (init, if with_init) and the queue, as a list result */
static FtStatus as_list(Queue *q, int with_init, FtValue *result) {
    pthread_mutex_lock(&q->mu);
    size_t n = q->n + (with_init ? 1 : 0);
    FtTensor **list = alloc(n * sizeof(FtTensor *));
    FtStatus s = list ? FT_OK : FT_ERROR_RUNTIME;
    size_t made = 0;
    if (s == FT_OK && with_init)
        s = tensor_clone(q->init, &list[made++]);
    for (size_t i = 0; s == FT_OK && i < q->n; i++)
        s = tensor_clone(q->items[q->head + i], &list[made++]);
    pthread_mutex_unlock(&q->mu);
    if (!list) {
        set_error("TensorQueue: out of memory");
        return s;
    }
    if (s != FT_OK) {
        for (size_t i = 0; i + 1 < made; i++)
            tensor_free(list[i]);
        return s;
    }
    result->tag = FT_TAG_TENSOR_LIST;
    result->list = list;
    result->len = n;
    return FT_OK;
}

static FtStatus get_raw_queue(void *user_data, void *state, const FtValue *args, size_t nargs, FtValue *result) {
    (void)user_data;
    (void)args;
    (void)nargs;
    return as_list(state, 0, result);
}

static FtStatus getstate(void *user_data, void *state, const FtValue *args, size_t nargs, FtValue *result) {
    (void)user_data;
    (void)args;
    (void)nargs;
    return as_list(state, 1, result);
}

static FtStatus setstate(void *user_data, const FtValue *args, size_t nargs, void **state) {
    (void)user_data;
    if (nargs != 1 || args[0].tag != FT_TAG_TENSOR_LIST || args[0].len < 1) {
        set_error("TensorQueue.__setstate__: expected a list of at least one tensor");
        return FT_ERROR_VALUE;
    }
    FtTensor *const *ts = args[0].list;
    Queue *q = queue_new(ts[0]);
    if (!q)
        return FT_ERROR_RUNTIME;
    for (size_t i = 1; i < args[0].len; i++) {
        if (!queue_push(q, ts[i])) {
            queue_free(q);
            return FT_ERROR_RUNTIME;
        }
    }
    *state = q;
    return FT_OK;
}

uint32_t ferrotorch_plugin_abi_version(void) { return FT_PLUGIN_ABI_VERSION; }

FtStatus ferrotorch_plugin_init(FtGetProc get_proc) {
    set_error = (__typeof__(set_error))get_proc("ft_set_error");
    class_def = (__typeof__(class_def))get_proc("ft_class_def");
    class_def_init = (__typeof__(class_def_init))get_proc("ft_class_def_init");
    class_def_method = (__typeof__(class_def_method))get_proc("ft_class_def_method");
    class_def_pickle = (__typeof__(class_def_pickle))get_proc("ft_class_def_pickle");
    alloc = (__typeof__(alloc))get_proc("ft_alloc");
    tensor_clone = (__typeof__(tensor_clone))get_proc("ft_tensor_clone");
    tensor_free = (__typeof__(tensor_free))get_proc("ft_tensor_free");
    if (!set_error || !class_def || !class_def_init || !class_def_method || !class_def_pickle || !alloc ||
        !tensor_clone || !tensor_free)
        return FT_ERROR_RUNTIME;
    FtStatus s = class_def(NAME, queue_free);
    if (s == FT_OK)
        s = class_def_init(NAME, "Tensor init", init, NULL);
    if (s == FT_OK)
        s = class_def_method(NAME, "push(Tensor x) -> ()", push, NULL);
    if (s == FT_OK)
        s = class_def_method(NAME, "pop() -> Tensor", pop, NULL);
    if (s == FT_OK)
        s = class_def_method(NAME, "top() -> Tensor", top, NULL);
    if (s == FT_OK)
        s = class_def_method(NAME, "size() -> int", size, NULL);
    if (s == FT_OK)
        s = class_def_method(NAME, "get_raw_queue() -> Tensor[]", get_raw_queue, NULL);
    if (s == FT_OK)
        s = class_def_pickle(NAME, "Tensor[]", getstate, setstate, NULL);
    return s;
}
