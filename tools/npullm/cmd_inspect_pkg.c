/* npullm inspect PKG (a directory): what a package holds, as its target reads
 * it. model.gguf's package keys (target, SoC, context, chunk, decode
 * buckets), then every context binary through the target's binary_info_get
 * (qnn-htp: libQnnSystem's QnnSystemContext_getBinaryInfo): the SoC / arch it
 * was finalized for and each graph with its input and output tensors. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "commands.h"
#include "npullm_gguf.h"
#include "npullm_plugin.h"

static const char *kind_dims(const npl_accel_tensor_info *t, char *buf, size_t n) {
    size_t o = (size_t)snprintf(buf, n, "%s [", t->name ? t->name : "?");
    for (uint32_t d = 0; d < t->rank && o < n; d++) o += (size_t)snprintf(buf + o, n - o, "%s%u", d ? ", " : "", t->dims[d]);
    if (o < n) snprintf(buf + o, n - o, "]");
    return buf;
}

static int bin_file(const struct dirent *e) {
    int i, end = 0;
    return sscanf(e->d_name, "accel_%d.bin%n", &i, &end) == 1 && end && !e->d_name[end];
}

/* one binary: 0, or 1 with a line on stderr */
static int inspect_bin(const npl_accel_api *api, npl_accel_backend *be, const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) || sb.st_size <= 0) {
        fprintf(stderr, "npullm inspect: %s: cannot read it\n", path);
        if (fd >= 0) close(fd);
        return 1;
    }
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    npl_accel_binary_info *bi = NULL;
    if (map == MAP_FAILED || api->binary_info_get(be, map, (uint64_t)sb.st_size, &bi) != NPL_ACCEL_OK) {
        fprintf(stderr, "npullm inspect: %s: %s\n", path, map == MAP_FAILED ? "mmap failed" : api->last_error(be));
        if (map != MAP_FAILED) munmap(map, (size_t)sb.st_size);
        return 1;
    }
    printf("%s: %.2f MiB, %s, %u graphs\n", path, sb.st_size / 1048576.0, bi->kernel_family, bi->n_graphs);
    for (uint32_t g = 0; g < bi->n_graphs; g++) {
        const npl_accel_graph_info *gi = &bi->graphs[g];
        char b[256];
        printf("  graph %s: %u inputs, %u outputs\n", gi->name ? gi->name : "?", gi->n_inputs, gi->n_outputs);
        for (uint32_t k = 0; k < gi->n_inputs; k++) printf("    in  %s\n", kind_dims(&gi->inputs[k], b, sizeof b));
        for (uint32_t k = 0; k < gi->n_outputs; k++) printf("    out %s\n", kind_dims(&gi->outputs[k], b, sizeof b));
    }
    api->binary_info_free(be, bi);
    munmap(map, (size_t)sb.st_size);
    return 0;
}

int npl_cmd_inspect_package(const char *dir) {
    char path[4200], target[65] = "", soc[65] = "", err[512];
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    npl_gguf_file *g = npl_gguf_file_open(path, NULL, err, sizeof err);
    if (!g) {
        fprintf(stderr, "npullm inspect: %s is not a package: %s\n", dir, err);
        return 1;
    }
    int64_t n_ctx = 0, cl[2] = {0, 0}, bk[16];
    const int64_t nb = npl_gguf_file_get_int_array(g, "npullm.package.buckets", bk, 16);
    const int ok = npl_gguf_file_get_str(g, "npullm.package.target", target, sizeof target) > 0 &&
                   npl_gguf_file_get_int(g, "npullm.package.n_ctx", &n_ctx) == NPL_OK;
    npl_gguf_file_get_str(g, "npullm.package.soc", soc, sizeof soc);
    npl_gguf_file_get_int_array(g, "npullm.package.chunk_limits", cl, 2);
    npl_gguf_file_close(g);
    if (!ok) {
        fprintf(stderr, "npullm inspect: %s: npullm.package.target / n_ctx missing (not an npullm package)\n", path);
        return 1;
    }
    printf("package %s: target %s%s%s, n_ctx %lld, chunk_limits [%lld, %lld]\n", dir, target, *soc ? ", soc " : "", soc,
           (long long)n_ctx, (long long)cl[0], (long long)cl[1]);
    printf("decode buckets (cache rows the AR-1 graphs read):");
    for (int64_t i = 0; i < nb && i < 16; i++) printf(" %lld", (long long)bk[i]);
    printf(" %lld\n", (long long)n_ctx);

    npl_accel_lib *lib = npl_accel_lib_open(target, NULL, NULL, err, sizeof err);
    const npl_accel_api *api = lib ? npl_accel_lib_api(lib) : NULL;
    npl_accel_backend *be = NULL;
    if (!api || api->backend_create(NULL, 0, &be, err, sizeof err) != NPL_ACCEL_OK) {
        fprintf(stderr, "npullm inspect: %s: %s\n", target, err);
        npl_accel_lib_close(lib);
        return 1;
    }
    struct dirent **ents = NULL;
    const int n = scandir(dir, &ents, bin_file, alphasort);
    int rc = n > 0 ? 0 : 1;
    if (n <= 0) fprintf(stderr, "npullm inspect: %s: no context binary (accel_N.bin)\n", dir);
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name);
        rc |= inspect_bin(api, be, path);
        free(ents[i]);
    }
    free(ents);
    api->backend_free(be);
    npl_accel_lib_close(lib);
    if (fflush(stdout)) rc = 1;
    return rc;
}
