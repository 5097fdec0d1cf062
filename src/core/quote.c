#include "core/quote.h"

#include <stdio.h>
#include <string.h>

void npl_quote(char *dst, size_t cap, const char *p, uint64_t len) {
    size_t o = 0;
    for (uint64_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (i >= 64 || o + 8 >= cap) { /* room is left for "...\0" */
            memcpy(dst + o, "...", 3);
            o += 3;
            break;
        }
        if (ch >= 0x20 && ch < 0x7f && ch != '\\') dst[o++] = (char)ch;
        else o += (size_t)snprintf(dst + o, cap - o, "\\x%02x", ch);
    }
    dst[o] = 0;
}
