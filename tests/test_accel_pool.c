/* ABI version 2's backend_create_on_pool on vnpu: the backend starts no
 * threads of its own, runs its parallel work through the host's run()
 * (every call counted), reports the host's thread count, and computes the
 * same bits as a backend with its own pool of as many threads; a bad host
 * pool or a "threads" option next to one is refused with a message. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu_api.h"
#include "accel_test_util.h"
#include "check.h"
#include "npullm_accel.h"

static const npl_accel_api *api;

/* The host's pool: runs the tasks one after another on the caller (allowed:
 * tasks never wait for each other) and counts what it was given. */
typedef struct {
    int runs, tasks;
    int max_n_tasks;
} host;

static void host_run(void *pool, int n_tasks, npl_accel_task_fn fn, void *arg) {
    host *h = pool;
    h->runs++;
    h->tasks += n_tasks;
    if (n_tasks > h->max_n_tasks) h->max_n_tasks = n_tasks;
    for (int i = n_tasks - 1; i >= 0; i--) fn(arg, i, n_tasks); /* any order */
}

static int n_tasks_of_process(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

enum { M = 48, K = 256, N = 192 };
static float x[M * K], w[K * N], g[N], y[M * N];

/* x [M, K] . w [K, N] -> RmsNorm(gamma) -> Softmax -> y, on backend b */
static void run(npl_accel_backend *b, float *out) {
    npl_accel_context *c = NULL;
    npl_accel_graph *gr = NULL;
    CHECK_EQ_INT(api->context_create(b, NULL, NULL, 0, &c), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_create(c, "g", &gr), NPL_ACCEL_OK);
    npl_accel_tensor_desc dx = accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 2, M, K, 0),
                          dw = accel_desc("w", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F32, 2, K, N, 0),
                          dg = accel_desc("gamma", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F32, 1, N, 0, 0),
                          dt = accel_desc("t", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, 2, M, N, 0),
                          du = accel_desc("u", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, 2, M, N, 0),
                          dy = accel_desc("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 2, M, N, 0);
    dw.data = w, dw.data_size = sizeof w;
    dg.data = g, dg.data_size = sizeof g;
    npl_accel_tensor_id ix, iw, ig, it, iu, iy;
    CHECK_EQ_INT(api->tensor_create(gr, &dx, &ix), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->tensor_create(gr, &dw, &iw), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->tensor_create(gr, &dg, &ig), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->tensor_create(gr, &dt, &it), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->tensor_create(gr, &du, &iu), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->tensor_create(gr, &dy, &iy), NPL_ACCEL_OK);
    npl_accel_node_desc mm = {"mm", "MatMul", NULL, 0, (npl_accel_tensor_id[]){ix, iw}, 2, &it, 1};
    npl_accel_node_desc nm = {"norm", "RmsNorm", NULL, 0, (npl_accel_tensor_id[]){it, ig}, 2, &iu, 1};
    npl_accel_node_desc sm = {"sm", "Softmax", NULL, 0, &iu, 1, &iy, 1};
    CHECK_EQ_INT(api->graph_add_node(gr, &mm), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_add_node(gr, &nm), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_add_node(gr, &sm), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_finalize(gr), NPL_ACCEL_OK);
    npl_accel_buffer in = {"x", x, sizeof x}, ob = {"y", out, sizeof y};
    for (int rep = 0; rep < 3; rep++) CHECK_EQ_INT(api->graph_execute(gr, &in, 1, &ob, 1), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->context_free(c), NPL_ACCEL_OK);
}

int main(void) {
    api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    CHECK(api && NPL_ACCEL_API_HAS(api, backend_create_on_pool));
    unsigned s = 7;
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = accel_frand(&s);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) w[i] = accel_frand(&s) * 0.1f;
    for (size_t i = 0; i < N; i++) g[i] = 1.0f + accel_frand(&s) * 0.5f;
    char err[256] = "";

    /* the reference: vnpu's own pool of 3 threads */
    static float ref[M * N];
    npl_accel_option three = {"threads", "3"};
    npl_accel_backend *own = NULL;
    CHECK_EQ_INT(api->backend_create(&three, 1, &own, err, sizeof err), NPL_ACCEL_OK);
    run(own, ref);
    api->backend_free(own);

    /* on the host's pool of 3: no thread started, every job through run() */
    host h = {0};
    npl_accel_host_pool hp = {&h, 3, host_run};
    const int tasks_before = n_tasks_of_process();
    npl_accel_backend *b = NULL;
    CHECK_EQ_INT(api->backend_create_on_pool(NULL, 0, &hp, &b, err, sizeof err), NPL_ACCEL_OK);
    CHECK(tasks_before > 0);
    CHECK_EQ_INT(n_tasks_of_process(), tasks_before);
    npl_accel_backend_info info;
    CHECK_EQ_INT(api->backend_get_info(b, &info), NPL_ACCEL_OK);
    CHECK_EQ_INT(info.n_threads, 3);
    run(b, y);
    CHECK_EQ_INT(n_tasks_of_process(), tasks_before);
    CHECK(h.runs >= 3); /* at least one job per execute */
    CHECK_EQ_INT(h.max_n_tasks, 3);
    CHECK(!memcmp(y, ref, sizeof y)); /* bit-identical with the own pool */
    api->backend_free(b);

    /* options still apply; a bad pool or "threads" next to one is refused */
    npl_accel_option fam = {"kernel_family", "generic"};
    CHECK_EQ_INT(api->backend_create_on_pool(&fam, 1, &hp, &b, err, sizeof err), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->backend_get_info(b, &info), NPL_ACCEL_OK);
    CHECK(!strcmp(info.kernel_family, "generic"));
    api->backend_free(b);
    b = (npl_accel_backend *)&h;
    CHECK_EQ_INT(api->backend_create_on_pool(&three, 1, &hp, &b, err, sizeof err), NPL_ACCEL_ERR_INVALID_ARG);
    CHECK(b == NULL && strstr(err, "threads: not with a host thread pool") != NULL);
    npl_accel_host_pool no_run = {&h, 3, NULL}, no_threads = {&h, 0, host_run};
    CHECK_EQ_INT(api->backend_create_on_pool(NULL, 0, &no_run, &b, err, sizeof err), NPL_ACCEL_ERR_INVALID_ARG);
    CHECK(strstr(err, "host thread pool") != NULL);
    CHECK_EQ_INT(api->backend_create_on_pool(NULL, 0, &no_threads, &b, err, sizeof err), NPL_ACCEL_ERR_INVALID_ARG);
    /* pool NULL is backend_create */
    CHECK_EQ_INT(api->backend_create_on_pool(&three, 1, NULL, &b, err, sizeof err), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->backend_get_info(b, &info), NPL_ACCEL_OK);
    CHECK_EQ_INT(info.n_threads, 3);
    api->backend_free(b);
    TEST_MAIN_END();
}
