/* npl_version: the library's version, from the header it was built with. */
#include "npullm.h"

const char *npl_version(void) { return NPL_VERSION_STRING; }
