/* npullm inspect FILE (placeholder until the GGUF reader lands). */
#include <stdio.h>
#include "commands.h"
int npl_cmd_inspect(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "npullm inspect: not implemented yet\n");
    return 1;
}
