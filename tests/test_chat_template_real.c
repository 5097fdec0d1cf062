/* The chat templates of chat_template_families.c against the models' real
 * templates rendered by jinja2 (tests/data/chat_template/real.json, made by
 * make_fixtures.py from llama.cpp's models/templates/NAME.jinja): each real
 * template text is detected as its family, and every conversation renders
 * byte for byte as jinja2 rendered it, with and without the generation
 * prompt (BOS and Phi-3.5's final eos_token cut, strftime_now markers
 * replaced by today's date, see make_fixtures.py). Also: Mistral refuses
 * roles that do not alternate, and an unrecognised template is reported
 * with the fallback named. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "llm/chat_template.h"

static const char *data_dir(void) {
    const char *d = getenv("NPL_TEST_DATA");
    return d && *d ? d : "data";
}

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    fclose(f);
    if (b) b[n] = '\0';
    return b;
}

/* s with every "\x01FMT\x02" replaced by strftime(FMT) of now */
static char *dated(const char *s) {
    size_t n = strlen(s);
    char *out = malloc(n + 256), *o = out;
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    while (*s) {
        const char *a = strchr(s, '\x01');
        if (!a) { strcpy(o, s); return out; }
        memcpy(o, s, (size_t)(a - s));
        o += a - s;
        const char *b = strchr(a, '\x02');
        char fmt[64];
        snprintf(fmt, sizeof fmt, "%.*s", (int)(b - a - 1), a + 1);
        o += strftime(o, 64, fmt, &tm);
        s = b + 1;
    }
    *o = '\0';
    return out;
}

int main(void) {
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/chat_template/real.json", data_dir());
    char *js = read_all(path);
    CHECK(js != NULL);
    cJSON *doc = js ? cJSON_Parse(js) : NULL, *e;
    CHECK(doc != NULL);
    int n_tmpl = 0;
    cJSON_ArrayForEach(e, doc) {
        const char *file = cJSON_GetObjectItem(e, "file")->valuestring;
        const char *family = cJSON_GetObjectItem(e, "family")->valuestring;
        npl_chat_tmpl want = NPL_CHAT_TMPL_UNKNOWN;
        CHECK_EQ_INT(npl_chat_tmpl_from_name(family, &want, err, sizeof err), 0);
        npl_chat_tmpl got = npl_chat_tmpl_detect(cJSON_GetObjectItem(e, "template")->valuestring, NULL);
        CHECK_EQ_INT(got, want);
        if (got != want) fprintf(stderr, "%s: detected as %s, not %s\n", file, npl_chat_tmpl_name(got), family);
        int n = 0, ok_n = 0, skipped = 0;
        cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(e, "cases")) {
            if (cJSON_IsTrue(cJSON_GetObjectItem(c, "by_design"))) { skipped += 2; continue; }
            cJSON *msgs = cJSON_GetObjectItem(c, "messages"), *mj;
            npl_chat_msg m[16];
            size_t nm = 0;
            cJSON_ArrayForEach(mj, msgs) {
                m[nm].role = cJSON_GetObjectItem(mj, "role")->valuestring;
                m[nm].content = cJSON_GetObjectItem(mj, "content")->valuestring;
                nm++;
            }
            for (int add = 0; add < 2; add++) {
                char *expect = dated(cJSON_GetObjectItem(c, add ? "add1" : "add0")->valuestring);
                npl_chat_buf b = { 0 };
                int rc = npl_chat_render(want, m, nm, add, &b, err, sizeof err);
                int ok = rc == 0 && b.data && strcmp(b.data, expect) == 0;
                /* message text spans lie inside the rendering, in order */
                for (size_t k = 0; ok && k < b.n_text; k++)
                    ok = b.text[k].off + b.text[k].len <= b.len && (k == 0 || b.text[k].off > b.text[k - 1].off);
                CHECK(ok);
                if (!ok) fprintf(stderr, "%s: conversation %d add_generation_prompt %d (rc %d %s)\n  ours:   \"%s\"\n  jinja2: \"%s\"\n",
                                 file, n / 2, add, rc, rc ? err : "", b.data ? b.data : "(null)", expect);
                n++;
                ok_n += ok;
                npl_chat_buf_free(&b);
                free(expect);
            }
        }
        printf("%-44s %-18s %d/%d renderings equal jinja2's%s\n", file, family, ok_n, n,
               skipped ? " (conversations without a system message skipped: no built-in default prompt)" : "");
        n_tmpl++;
    }
    CHECK(n_tmpl >= 8);

    /* Mistral's templates raise on roles that do not alternate */
    const npl_chat_msg bad[] = { { "user", "a" }, { "user", "b" } };
    npl_chat_buf b = { 0 };
    CHECK_EQ_INT(npl_chat_render(NPL_CHAT_TMPL_MISTRAL_V3_TEKKEN, bad, 2, 1, &b, err, sizeof err), -1);
    CHECK(strstr(err, "alternate") != NULL);
    CHECK_EQ_INT(npl_chat_render(NPL_CHAT_TMPL_MISTRAL_V7_TEKKEN, bad, 2, 1, &b, err, sizeof err), -1);
    const npl_chat_msg tool[] = { { "user", "a" }, { "tool", "b" } };
    CHECK_EQ_INT(npl_chat_render(NPL_CHAT_TMPL_MISTRAL_V3_TEKKEN, tool, 2, 1, &b, err, sizeof err), -1);
    CHECK(strstr(err, "tool") != NULL);
    npl_chat_buf_free(&b);

    /* an unrecognised template: the fallback, said once in one line */
    char note[256];
    CHECK_EQ_INT(npl_chat_tmpl_choose("{{ messages[0]['content'] }}", NPL_CHAT_TMPL_CHATML, note, sizeof note),
                 NPL_CHAT_TMPL_CHATML);
    CHECK(strstr(note, "not a template") && strstr(note, "using chatml") && !strchr(note, '\n'));
    printf("unknown: %s\n", note);
    CHECK_EQ_INT(npl_chat_tmpl_choose("<|header_start|>x<|header_end|>", NPL_CHAT_TMPL_LLAMA3, note, sizeof note),
                 NPL_CHAT_TMPL_LLAMA3);
    CHECK(strstr(note, "\"llama4\"") && strstr(note, "using llama3"));
    printf("llama4: %s\n", note);
    CHECK_EQ_INT(npl_chat_tmpl_choose("<start_of_turn>", NPL_CHAT_TMPL_CHATML, note, sizeof note), NPL_CHAT_TMPL_GEMMA);
    CHECK(note[0] == '\0');
    cJSON_Delete(doc);
    free(js);
    TEST_MAIN_END();
}
