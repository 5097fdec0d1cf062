/* libFuzzer harness for the MNN-style config.json (engine_config.c) and
 * the MNN sampler mapping (sampler_params.c).
 *
 * The input is the file's bytes. Two paths:
 *   1. written to a temporary NAME.json (in $TMPDIR, else /dev/shm or /tmp;
 *      one per process)
 *      and loaded with npl_engine_config_load, as npl_engine_open does;
 *   2. parsed with cJSON and, if it is an object, mapped with
 *      npl_sampler_params_from_mnn; a mapping that succeeds is turned into
 *      a sampler chain, which samples a few tokens from fixed logits.
 *
 * Checks: failures always say why; a failed mapping leaves the
 * params unchanged (as sampler.h promises); accepted values are in the
 * documented ranges; a chain that builds samples ids in [0, n_vocab).
 * Build and run with: fuzz/run config SECONDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "llm/engine_config.h"
#include "llm/sampler.h"

enum { CF_VOCAB = 32 };

static void cf_check_err(const char *err, size_t cap) {
    /* a message, and one line: user strings in it are escaped */
    if (!memchr(err, 0, cap) || !err[0] || strchr(err, '\n')) abort();
}

/* The temporary file, created once per process and removed at exit. */
static char cf_tmp[512];
static void cf_unlink(void) { unlink(cf_tmp); }
static const char *cf_path(void) {
    char *path = cf_tmp;
    if (path[0]) return path;
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(path, sizeof cf_tmp, "%s/npl_fuzz_config_XXXXXX.json", dir);
    int fd = mkstemps(path, 5);
    if (fd < 0) abort();
    close(fd);
    atexit(cf_unlink);
    return path;
}

static void cf_engine_config(const uint8_t *data, size_t size) {
    const char *path = cf_path();
    FILE *fp = fopen(path, "wb");
    if (!fp) abort();
    if (size && fwrite(data, 1, size, fp) != size) abort();
    fclose(fp);
    if (!npl_engine_config_is_json(path)) abort();

    npl_engine_params p = npl_engine_default_params();
    char model[48]; /* short on purpose: long model paths are cut, not overflowed */
    char *owned[1] = {NULL};
    char err[256];
    memset(model, 0, sizeof model);
    if (npl_engine_config_load(path, &p, model, sizeof model, owned, err, sizeof err)) {
        cf_check_err(err, sizeof err);
    } else {
        if (!memchr(model, 0, sizeof model) || !model[0]) abort();
        if (p.n_threads < 0 || p.n_threads > 256 || p.max_new_tokens < 0 || p.n_ctx < 0) abort();
        if (p.n_chunk_limits < 0 || p.n_chunk_limits > NPL_MAX_CHUNK_LIMITS) abort();
        for (int i = 0; i < p.n_chunk_limits; i++)
            if (p.chunk_limits[i] < 1 || p.chunk_limits[i] > 65536) abort();
        if (p.system_prompt && p.system_prompt != owned[0]) abort();
        if (p.system_prompt) (void)strlen(p.system_prompt);
    }
    free(owned[0]);
}

static void cf_sampler(const uint8_t *data, size_t size) {
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    if (!root) return;
    npl_sampler_params p = npl_sampler_default_params(), before;
    p.seed = 1234;
    before = p;
    char err[256];
    if (npl_sampler_params_from_mnn(&p, root, err, sizeof err)) {
        cf_check_err(err, sizeof err);
        if (memcmp(&p, &before, sizeof p)) abort(); /* unchanged on failure */
        cJSON_Delete(root);
        return;
    }
    cJSON_Delete(root);
    if (p.n_stages < 0 || p.n_stages > NPL_SAMPLER_MAX_STAGES) abort();
    for (int i = 0; i < p.n_stages; i++)
        if ((unsigned)p.stages[i] >= NPL_SAMPLER_STAGE_COUNT) abort();
    npl_sampler *chain = npl_sampler_chain_from_params(&p, CF_VOCAB, err, sizeof err);
    if (!chain) {
        cf_check_err(err, sizeof err);
        return;
    }
    float logits[CF_VOCAB];
    for (int i = 0; i < CF_VOCAB; i++) logits[i] = (float)((i * 7) % 11) - 3.0f;
    for (int step = 0; step < 4; step++) {
        int32_t tok = -1;
        if (npl_sampler_sample(chain, logits, CF_VOCAB, &tok)) {
            const char *e = npl_sampler_last_error(chain);
            if (!e || !e[0]) abort();
            break;
        }
        if (tok < 0 || tok >= CF_VOCAB) abort();
        npl_sampler_accept(chain, tok);
    }
    npl_sampler_free(chain);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (1u << 20) + 16) return 0;
    cf_engine_config(data, size);
    cf_sampler(data, size);
    return 0;
}
