/* A C program using ferrotorch through its C ABI the way a user would:
 * it trains a small MLP (Linear-ReLU-Linear, Adam, MSE loss from the op
 * `mse_loss` called by name) on y = sin(x0) + x1^2 and checks that the
 * loss falls, saves the weights as safetensors and loads them back, and
 * checks the error paths (a shape mismatch, a null and a freed handle, a
 * panicking op). tests/c_program.rs compiles and runs it; it exits 0 only
 * when every check holds. */
#include "ferrotorch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define OK(call)                                                              \
    do {                                                                      \
        FtStatus s_ = (call);                                                 \
        if (s_ != FT_OK) {                                                    \
            fprintf(stderr, "%s:%d: %s failed (%d): %s\n", __FILE__,          \
                    __LINE__, #call, (int)s_, ft_last_error());               \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__,  \
                    #cond);                                                   \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
            failures++;                                                       \
        }                                                                     \
    } while (0)

static FtValue tensor_value(FtTensor *t) {
    FtValue v;
    memset(&v, 0, sizeof v);
    v.tag = FT_TAG_TENSOR;
    v.tensor = t;
    return v;
}

static double item(FtTensor *t) {
    double v = 0;
    OK(ft_tensor_item_double(t, &v));
    return v;
}

/* mse_loss(pred, target), called by name with boxed arguments. */
static FtTensor *mse(FtTensor *pred, FtTensor *target) {
    FtValue args[2] = {tensor_value(pred), tensor_value(target)};
    FtValue result;
    size_t n = 0;
    OK(ft_call("mse_loss", args, 2, NULL, 0, &result, 1, &n));
    CHECK(n == 1 && result.tag == FT_TAG_TENSOR, "mse_loss gave %zu results", n);
    return result.tensor;
}

static void train(const char *weights_path) {
    enum { N = 256 };
    static float x[N * 2], y[N];
    srand(7);
    for (int i = 0; i < N; i++) {
        x[2 * i] = (float)rand() / RAND_MAX * 4.0f - 2.0f;
        x[2 * i + 1] = (float)rand() / RAND_MAX * 2.0f - 1.0f;
        y[i] = sinf(x[2 * i]) + x[2 * i + 1] * x[2 * i + 1];
    }
    int64_t xshape[2] = {N, 2}, yshape[2] = {N, 1};
    FtTensor *X, *Y;
    OK(ft_tensor_from_data(x, sizeof x, xshape, 2, FT_FLOAT32, &X));
    OK(ft_tensor_from_data(y, sizeof y, yshape, 2, FT_FLOAT32, &Y));

    OK(ft_manual_seed(0));
    FtModule *layers[3];
    OK(ft_nn_linear(2, 32, true, &layers[0]));
    OK(ft_nn_relu(&layers[1]));
    OK(ft_nn_linear(32, 1, true, &layers[2]));
    FtModule *model;
    OK(ft_nn_sequential((const FtModule *const *)layers, 3, &model));
    for (int i = 0; i < 3; i++) OK(ft_module_free(layers[i]));

    size_t nparams = 0;
    OK(ft_module_parameters(model, NULL, 0, &nparams));
    CHECK(nparams == 4, "the MLP has %zu parameters", nparams);
    FtTensor *params[4];
    OK(ft_module_parameters(model, params, 4, &nparams));
    FtOptimizer *opt;
    OK(ft_optim_adam((const FtTensor *const *)params, 4, 0.01, 0.9, 0.999, 1e-8, 0.0, &opt));

    double first = 0, last = 0;
    for (int step = 0; step < 300; step++) {
        FtTensor *pred, *loss;
        OK(ft_module_forward(model, X, &pred));
        loss = mse(pred, Y);
        OK(ft_optimizer_zero_grad(opt));
        OK(ft_tensor_backward(loss, NULL, false, false));
        OK(ft_optimizer_step(opt));
        if (step == 0) first = item(loss);
        last = item(loss);
        OK(ft_tensor_free(pred));
        OK(ft_tensor_free(loss));
    }
    printf("loss %.4f -> %.4f\n", first, last);
    CHECK(last < first * 0.2, "the loss fell from %f to only %f", first, last);

    /* the gradient reached the parameters the optimizer holds */
    FtTensor *g = NULL;
    OK(ft_tensor_grad(params[0], &g));
    CHECK(g != NULL, "the first weight has no gradient");
    OK(ft_tensor_free(g));

    /* save, perturb, load back: predictions return to what they were */
    FtStateDict *sd;
    OK(ft_module_state_dict(model, &sd));
    size_t nkeys = 0;
    OK(ft_state_dict_len(sd, &nkeys));
    char *key0;
    OK(ft_state_dict_key(sd, 0, &key0));
    CHECK(nkeys == 4 && strcmp(key0, "0.weight") == 0, "keys: %zu, first '%s'", nkeys, key0);
    ft_string_free(key0);
    OK(ft_safetensors_save(sd, weights_path));
    OK(ft_state_dict_free(sd));

    FtTensor *before, *after;
    OK(ft_module_forward(model, X, &before));
    bool prev;
    OK(ft_set_grad_enabled(false, &prev));
    FtTensor *w;
    OK(ft_tensor_clone(params[0], &w));
    FtValue zero_args[1] = {tensor_value(w)};
    FtValue r;
    size_t nr;
    OK(ft_call("zero_", zero_args, 1, NULL, 0, &r, 1, &nr));
    OK(ft_tensor_free(r.tensor));
    OK(ft_set_grad_enabled(prev, NULL));
    FtStateDict *loaded;
    OK(ft_safetensors_load(weights_path, &loaded));
    OK(ft_module_load_state_dict(model, loaded, true));
    OK(ft_state_dict_free(loaded));
    OK(ft_module_forward(model, X, &after));
    FtTensor *diff, *total;
    OK(ft_sub(before, after, &diff));
    OK(ft_call("abs", (FtValue[]){tensor_value(diff)}, 1, NULL, 0, &r, 1, &nr));
    OK(ft_sum(r.tensor, &total));
    CHECK(item(total) == 0.0, "reloaded weights predict differently: %g", item(total));
    OK(ft_tensor_free(r.tensor));
    FtTensor *frees[] = {w, before, after, diff, total, X, Y};
    for (size_t i = 0; i < sizeof frees / sizeof *frees; i++) OK(ft_tensor_free(frees[i]));
    for (int i = 0; i < 4; i++) OK(ft_tensor_free(params[i]));
    OK(ft_optimizer_free(opt));
    OK(ft_module_free(model));
}

static void errors(void) {
    FtTensor *a, *b, *c = NULL;
    OK(ft_ones((int64_t[]){2, 3}, 2, FT_FLOAT32, &a));
    OK(ft_ones((int64_t[]){4, 5}, 2, FT_FLOAT32, &b));

    FtStatus s = ft_mm(a, b, &c);
    CHECK(s == FT_ERROR_RUNTIME && c == NULL, "mm of 2x3 and 4x5 gave %d", (int)s);
    CHECK(strstr(ft_last_error(), "[2, 3]") && strstr(ft_last_error(), "[4, 5]"),
          "the message names the shapes: %s", ft_last_error());

    s = ft_add(a, NULL, &c);
    CHECK(s == FT_ERROR_NULL_HANDLE, "a null handle gave %d", (int)s);

    s = ft_call("no_such_op", NULL, 0, NULL, 0, NULL, 0, NULL);
    CHECK(s == FT_ERROR_KEY && strstr(ft_last_error(), "no_such_op"), "unknown op: %d %s",
          (int)s, ft_last_error());

    /* keyword arguments, checked against the schema */
    FtValue args[1] = {tensor_value(a)};
    FtKwarg kw[2];
    memset(kw, 0, sizeof kw);
    kw[0].name = "dim";
    kw[0].value.tag = FT_TAG_INT;
    kw[0].value.i = 1;
    kw[1].name = "keepdim";
    kw[1].value.tag = FT_TAG_BOOL;
    kw[1].value.i = 1;
    FtValue r;
    size_t nr = 0;
    OK(ft_call("sum", args, 1, kw, 2, &r, 1, &nr));
    int64_t shape[4];
    size_t nd;
    OK(ft_tensor_shape(r.tensor, shape, 4, &nd));
    CHECK(nd == 2 && shape[0] == 2 && shape[1] == 1, "sum(dim=1, keepdim) shape %zu", nd);
    float data[2];
    OK(ft_tensor_copy_to(r.tensor, data, sizeof data));
    CHECK(data[0] == 3.0f && data[1] == 3.0f, "sums %f %f", data[0], data[1]);
    OK(ft_tensor_free(r.tensor));
    kw[0].value.tag = FT_TAG_STR;
    kw[0].value.str = "one";
    s = ft_call("sum", args, 1, kw, 1, &r, 1, &nr);
    CHECK(s == FT_ERROR_TYPE, "sum(dim='one') gave %d: %s", (int)s, ft_last_error());

    /* a panicking op (registered with FERROTORCH_TEST_OPS=1) */
    FtValue pargs[2] = {tensor_value(a)};
    memset(&pargs[1], 0, sizeof pargs[1]);
    pargs[1].tag = FT_TAG_STR;
    pargs[1].str = "boom from C";
    s = ft_call("_test_panic", pargs, 2, NULL, 0, &r, 1, &nr);
    CHECK(s == FT_ERROR_INTERNAL && strstr(ft_last_error(), "boom from C"),
          "a panic gave %d: %s", (int)s, ft_last_error());

    /* double free and use after free are errors, not crashes */
    OK(ft_tensor_free(b));
    s = ft_tensor_free(b);
    CHECK(s == FT_ERROR_INVALID_HANDLE, "a double free gave %d", (int)s);
    s = ft_add(a, b, &c);
    CHECK(s == FT_ERROR_INVALID_HANDLE && strstr(ft_last_error(), "freed"),
          "use after free gave %d: %s", (int)s, ft_last_error());
    OK(ft_tensor_free(a));
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "mlp.safetensors";
    printf("ferrotorch %s\n", ft_version());
    train(path);
    errors();
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
