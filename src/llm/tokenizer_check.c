/* Strict checks of vocabulary text, used by npl_tokenizer_load: a corrupted
 * vocabulary is refused at load, naming the key and the index, instead of
 * tokenizing into garbage. */
#include <stdio.h>
#include <string.h>

#include "llm/tokenizer_impl.h"

size_t npl_tok_utf8_invalid_at(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!k || k > n - i) return i;
        uint32_t cp = k == 1 ? c : k == 2 ? c & 0x1f : k == 3 ? c & 0x0f : c & 0x07;
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xc0) != 0x80) return i;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        /* overlong forms, surrogates and code points past U+10FFFF */
        if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += k;
    }
    return n;
}

/* "<0xHH>" with two upper-case hex digits: the only form the encoder looks
 * up (byte fallback searches "<0x%02X>") and sentencepiece writes. */
int npl_tok_is_byte_text(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return 0;
    for (int i = 3; i < 5; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'F'))) return 0;
    return 1;
}

void npl_tok_quote(const char *s, size_t n, char *out, size_t cap) {
    size_t o = 0;
    const size_t max_in = 48;
    if (cap < 8) {
        if (cap) out[0] = '\0';
        return;
    }
    out[o++] = '"';
    for (size_t i = 0; i < n && i < max_in && o + 6 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') out[o++] = (char)c;
        else o += (size_t)snprintf(out + o, cap - o, "\\x%02X", c);
    }
    if (n > max_in && o + 5 < cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '"';
    out[o] = '\0';
}
