/* config.json and the shared-weight search of stage 6 (see package_write.h). */
#include "compiler/package_write.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/package_dir.h"

int64_t npl_pkg_find_bytes(const uint8_t *bin, uint64_t bin_size, const void *data, uint64_t n) {
    if (!n || n > bin_size) return -1;
    const uint64_t probe = n < 64 ? n : 64; /* candidates by their first bytes, then the whole of them */
    for (const uint8_t *p = bin, *end = bin + bin_size; (uint64_t)(end - p) >= n;) {
        const uint8_t *q = memmem(p, (size_t)(end - p - (int64_t)(n - probe)), data, (size_t)probe);
        if (!q) return -1;
        if (!memcmp(q, data, (size_t)n)) return (int64_t)(q - bin);
        p = q + 1;
    }
    return -1;
}

int npl_pkg_write_config(const char *dir, const npl_pkg_config *c, char *err, size_t errlen) {
    cJSON *o = cJSON_CreateObject(), *prec = cJSON_CreateObject(), *bins = cJSON_CreateArray(), *sh = cJSON_CreateArray();
    const int cl[2] = {c->chunk, 1};
    int ok = o && prec && bins && sh;
    if (ok) {
        cJSON_AddNumberToObject(o, "npullm_package_version", NPL_PACKAGE_VERSION);
        cJSON_AddStringToObject(o, "llm_model", "model.gguf");
        cJSON_AddStringToObject(o, "backend_type", "cpu");
        cJSON_AddStringToObject(o, "accel", c->target);
        if (c->soc) cJSON_AddStringToObject(o, "soc", c->soc);
        if (c->accel_version) cJSON_AddStringToObject(o, "accel_version", c->accel_version);
        cJSON_AddItemToObject(o, "chunk_limits", cJSON_CreateIntArray(cl, 2));
        cJSON_AddNumberToObject(o, "max_context_length", c->n_ctx);
        cJSON *bk = cJSON_AddArrayToObject(o, "buckets"); /* decode KV lengths: graphs s*_ar1_kvL, then s*_ar1_o1 */
        for (int i = 0; bk && i <= c->n_buckets; i++)
            cJSON_AddItemToArray(bk, cJSON_CreateNumber(i < c->n_buckets ? c->buckets[i] : c->n_ctx));
        cJSON_AddStringToObject(o, "precision", c->act);
        cJSON_AddStringToObject(o, "weights", c->weights);
        cJSON_AddStringToObject(prec, "activations", c->act);
        cJSON_AddStringToObject(prec, "weights", c->weights);
        cJSON_AddStringToObject(prec, "output_weights", c->output_weights ? c->output_weights : c->weights);
        cJSON_AddStringToObject(prec, "kv_cache", "f16");
        cJSON_AddItemToObject(o, "precisions", prec);
        prec = NULL;
        for (int i = 0; i < c->n_bins; i++) {
            const npl_pkg_bin *b = &c->bins[i];
            cJSON *e = cJSON_CreateObject(), *gs = cJSON_CreateArray();
            char hex[20];
            snprintf(hex, sizeof hex, "%016llx", (unsigned long long)b->checksum);
            if (!e || !gs) {
                cJSON_Delete(e), cJSON_Delete(gs);
                ok = 0;
                break;
            }
            for (int k = 0; k < b->n_graphs; k++) cJSON_AddItemToArray(gs, cJSON_CreateString(b->graphs[k]));
            cJSON_AddStringToObject(e, "file", b->file);
            cJSON_AddNumberToObject(e, "size", (double)b->size);
            cJSON_AddStringToObject(e, "fnv1a64", hex);
            cJSON_AddItemToObject(e, "graphs", gs);
            cJSON_AddItemToArray(bins, e);
        }
        cJSON_AddItemToObject(o, "context_binaries", bins);
        /* true: each weight once, and the binaries load on a device only (QNN on x86 refuses them) */
        cJSON_AddBoolToObject(o, "weight_sharing", c->weight_sharing != 0);
        bins = NULL;
        for (int i = 0; ok && i < c->n_shared; i++) {
            cJSON *e = cJSON_CreateObject();
            if (!e) { ok = 0; break; }
            cJSON_AddStringToObject(e, "name", c->shared[i].name);
            cJSON_AddStringToObject(e, "file", c->shared[i].file);
            cJSON_AddNumberToObject(e, "offset", (double)c->shared[i].offset);
            cJSON_AddItemToArray(sh, e);
        }
        cJSON_AddItemToObject(o, "shared_weights", sh);
        sh = NULL;
    }
    char *text = ok ? cJSON_Print(o) : NULL;
    cJSON_Delete(o), cJSON_Delete(prec), cJSON_Delete(bins), cJSON_Delete(sh);
    if (!text) {
        snprintf(err, errlen, "config.json: out of memory");
        return -1;
    }
    /* cJSON indents with tabs: the file keeps the style packages have had
     * ("  \"key\": value"); a tab inside a string is escaped, so every tab
     * is layout */
    size_t w = 0;
    char *pretty = malloc(2 * strlen(text) + 1);
    for (size_t i = 0; pretty && text[i]; i++)
        if (text[i] != '\t') pretty[w++] = text[i];
        else if (i && text[i - 1] == ':') pretty[w++] = ' ';
        else pretty[w++] = ' ', pretty[w++] = ' ';
    free(text);
    if (!pretty) {
        snprintf(err, errlen, "config.json: out of memory");
        return -1;
    }
    pretty[w] = 0;
    text = pretty;
    char path[NPL_PKG_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "wb");
    size_t n = strlen(text);
    int rc = f && fwrite(text, 1, n, f) == n && fputc('\n', f) != EOF ? 0 : -1;
    if (f && fclose(f)) rc = -1;
    if (rc) snprintf(err, errlen, "%s: %s", path, strerror(errno));
    free(text);
    return rc;
}
