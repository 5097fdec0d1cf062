/* Text from a file or a user, made safe for a one-line error message. */
#ifndef NPL_QUOTE_H
#define NPL_QUOTE_H
#include <stddef.h>
#include <stdint.h>

/* Printable ASCII is kept; other bytes and the backslash become \xNN; past
 * 64 bytes (or when dst fills up) the text is cut with "...". cap >= 12. */
void npl_quote(char *dst, size_t cap, const char *p, uint64_t len);

#endif
