/* npullm compile --target: the compiler asks the target about every node
 * (validate_node) and keeps what it refuses on the CPU.
 *   - target "stub" (tests/plugins/plugin_stub.c: vnpu refusing RmsNorm):
 *     every RmsNorm stays a CPU op of the package graph, the summary names
 *     each with the target's reason, the package records the target, and its
 *     logits match the CPU path as closely as the vnpu package's do;
 *   - a package whose target plugin is not installed fails to open with one
 *     line naming the plugin;
 *   - a static build's way: vnpu linked in and given as a provider compiles
 *     and runs a package without any library. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel/vnpu/vnpu_api.h"
#include "check.h"
#include "compiler/compiler.h"
#include "format/gguf.h"
#include "format/graph_file.h"
#include "llm/runner.h"
#include "package_compare.h"

#define CHUNK 16

/* count of op nodes of the package graph at dir, and the "accel" attribute
 * of its plugin nodes (all equal, else "mixed") */
static int package_ops(const char *dir, npl_op op, int *n_plugin, char *accel, size_t len) {
    char path[400], err[512];
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    npl_gguf *f = npl_gguf_open(path, NULL, err, sizeof err);
    npl_graph *g = f ? npl_graph_file_load(f, err, sizeof err) : NULL;
    int n = -1;
    *n_plugin = 0;
    accel[0] = 0;
    if (g) {
        n = 0;
        for (int i = 0; i < npl_graph_n_nodes(g); i++) {
            const npl_node *nd = npl_graph_node(g, i);
            n += nd->op == op;
            if (nd->op != NPL_OP_PLUGIN) continue;
            (*n_plugin)++;
            const npl_attr *a = npl_attr_get(g, i, "accel");
            const char *v = a && a->kind == NPL_ATTR_STR ? a->strs[0] : "(none)";
            if (!accel[0]) snprintf(accel, len, "%s", v);
            else if (strcmp(accel, v)) snprintf(accel, len, "mixed");
        }
    } else {
        fprintf(stderr, "%s: %s\n", path, err);
    }
    npl_graph_free(g);
    npl_gguf_close(f);
    return n;
}

static void read_text(const char *path, char *buf, size_t len) {
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    buf[fread(buf, 1, len - 1, f)] = 0;
    fclose(f);
}

/* worst |logit diff| of the package at dir against the CPU path */
static double against_cpu(const char *model, const char *dir, const npl_runner_params *rp) {
    char err[1024];
    double worst = -1;
    const int lens[3] = {1, CHUNK, 2 * CHUNK + 3};
    for (int i = 0; i < 3; i++) {
        npl_runner *cpu = npl_runner_open(model, rp, err, sizeof err);
        npl_runner *pkg = npl_runner_open(dir, rp, err, sizeof err);
        CHECK(cpu != NULL && pkg != NULL);
        if (!pkg) fprintf(stderr, "open %s: %s\n", dir, err);
        if (cpu && pkg) {
            double e = package_compare(cpu, pkg, lens[i], 4, npl_runner_hparams(cpu)->n_vocab, 31, 7);
            if (!(e <= worst)) worst = e;
        }
        npl_runner_close(pkg);
        npl_runner_close(cpu);
    }
    return worst;
}

int main(void) {
    const char *data = getenv("NPL_TEST_DATA");
    char model[1024], dir[256], vdir[300], log_path[300], buf[1 << 16], err[1024], cmd[2048];
    snprintf(model, sizeof model, "%s/models/rand-llama-f32.gguf", data ? data : "data");
    snprintf(dir, sizeof dir, "/tmp/npl_test_compile_target_%d", (int)getpid());
    snprintf(vdir, sizeof vdir, "%s.vnpu", dir);
    snprintf(log_path, sizeof log_path, "%s.log", dir);

    npl_compile_params p = npl_compile_default_params();
    p.n_ctx = 256;
    p.chunk = CHUNK;
    p.act = NPL_ACT_F32;
    p.n_threads = 2;
    CHECK(!strcmp(p.target, "vnpu")); /* the build's default */

    /* the default target: every norm on the accelerator */
    CHECK_EQ_INT(npl_compile(model, vdir, &p, err, sizeof err), 0);
    if (npl_test_failures) fprintf(stderr, "compile vnpu: %s\n", err);
    int n_plugin_v = 0;
    char accel[32];
    const int norms_v = package_ops(vdir, NPL_OP_RMS_NORM, &n_plugin_v, accel, sizeof accel);
    printf("vnpu package: %d rms_norm on the CPU, %d plugin node(s), accel %s\n", norms_v, n_plugin_v, accel);
    CHECK_EQ_INT(norms_v, 0);
    CHECK_EQ_INT(n_plugin_v, 1);
    CHECK(!strcmp(accel, "vnpu"));

    /* --target stub: the norms stay on the CPU, named in the summary */
    npl_compile_params ps = p;
    ps.target = "stub";
    ps.log = fopen(log_path, "w");
    CHECK(ps.log != NULL);
    CHECK_EQ_INT(npl_compile(model, dir, &ps, err, sizeof err), 0);
    if (npl_test_failures) fprintf(stderr, "compile stub: %s\n", err);
    if (ps.log) fclose(ps.log);
    read_text(log_path, buf, sizeof buf);
    remove(log_path);
    int n_plugin = 0;
    const int norms = package_ops(dir, NPL_OP_RMS_NORM, &n_plugin, accel, sizeof accel);
    /* rand-llama: 2 layers x (attention norm, FFN norm) + the output norm */
    printf("stub package: %d rms_norm on the CPU, %d plugin nodes, accel %s\n", norms, n_plugin, accel);
    CHECK_EQ_INT(norms, 5);
    CHECK(n_plugin >= 4); /* attention and FFN blocks of each layer, the output matmul */
    CHECK(!strcmp(accel, "stub"));
    int named = 0;
    for (const char *s = buf; (s = strstr(s, "rms_norm: target stub refuses RmsNorm: the stub target takes no RmsNorm"));
         s++)
        named++;
    printf("summary lines naming a refused norm: %d\n", named);
    CHECK_EQ_INT(named, 5);
    CHECK(strstr(buf, "  target     stub\n") != NULL);
    char cfg[400];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    read_text(cfg, buf, sizeof buf);
    CHECK(strstr(buf, "\"accel\": \"stub\"") != NULL);

    /* the stub package computes what the CPU path does, as the vnpu one */
    npl_runner_params rp = npl_runner_default_params();
    rp.n_ctx = 256;
    rp.n_threads = 2;
    const double ev = against_cpu(model, vdir, &rp), es = against_cpu(model, dir, &rp);
    printf("max |logit diff| vs the CPU path (f32 activations): vnpu package %.3g, stub package %.3g\n", ev, es);
    CHECK(ev >= 0 && ev < 1e-2);
    CHECK(es >= 0 && es < 1e-2);

    /* a package naming a plugin that is not installed: one line naming it */
    char pdir[300], lib[400], gone[300], cp[8192];
    snprintf(pdir, sizeof pdir, "%s.plugins", dir);
    snprintf(gone, sizeof gone, "%s.gone", dir);
    snprintf(lib, sizeof lib, "%s/libnpl_accel_gone.so", pdir);
    /* the test runs in tests/ of the source tree; the plugin is next to the executable */
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    if (strrchr(exe, '/')) *strrchr(exe, '/') = 0;
    snprintf(cp, sizeof cp, "mkdir -p %s && cp %s/libnpl_accel_stub.so %s", pdir, exe, lib);
    CHECK_EQ_INT(system(cp), 0);
    npl_compile_params pg = p;
    pg.target = "gone";
    pg.plugin_dir = pdir;
    CHECK_EQ_INT(npl_compile(model, gone, &pg, err, sizeof err), 0);
    if (npl_test_failures) fprintf(stderr, "compile gone: %s\n", err);
    npl_runner_params rg = rp;
    rg.plugin_dir = pdir;
    npl_runner *r = npl_runner_open(gone, &rg, err, sizeof err);
    CHECK(r != NULL); /* installed: it runs */
    npl_runner_close(r);
    remove(lib);
    r = npl_runner_open(gone, &rg, err, sizeof err);
    CHECK(r == NULL);
    printf("plugin removed: %s\n", err);
    CHECK(strstr(err, "plugin libnpl_accel_gone.so is not installed") != NULL && strchr(err, '\n') == NULL);
    npl_runner_close(r);
    r = npl_runner_open(gone, &rp, err, sizeof err); /* the default places: next to the executable, the package */
    CHECK(r == NULL);
    printf("default places: %s\n", err);
    CHECK(strstr(err, "libnpl_accel_gone.so is not installed") != NULL && strstr(err, gone) != NULL);
    npl_runner_close(r);

    /* a static build: vnpu linked in (its archive) as a provider, no dlopen */
    char idir[300];
    snprintf(idir, sizeof idir, "%s.inproc", dir);
    const npl_plugin_provider prov = {"inproc", npl_vnpu_get_api};
    npl_compile_params pi = p;
    pi.target = "inproc";
    pi.providers = &prov;
    pi.n_providers = 1;
    CHECK_EQ_INT(npl_compile(model, idir, &pi, err, sizeof err), 0);
    if (npl_test_failures) fprintf(stderr, "compile inproc: %s\n", err);
    r = npl_runner_open(idir, &rp, err, sizeof err);
    CHECK(r == NULL && strstr(err, "libnpl_accel_inproc.so is not installed")); /* not a library */
    npl_runner_close(r);
    npl_runner_params ri = rp;
    ri.providers = &prov;
    ri.n_providers = 1;
    const double ei = against_cpu(model, idir, &ri);
    printf("built-in provider package: max |logit diff| vs the CPU path %.3g\n", ei);
    CHECK(ei >= 0 && ei < 1e-2);

    snprintf(cmd, sizeof cmd, "rm -rf %s %s %s %s %s", dir, vdir, gone, pdir, idir);
    CHECK_EQ_INT(system(cmd), 0);
    TEST_MAIN_END();
}
