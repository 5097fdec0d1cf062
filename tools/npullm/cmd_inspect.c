/* npullm inspect FILE: validate a GGUF file and print its metadata and
 * tensor table. A file the reader rejects gives one line on stderr, exit 1.
 * A package directory: cmd_inspect_pkg.c. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "npullm_gguf.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: npullm inspect FILE|PKG\n"
            "\n"
            "Validate a GGUF file (v2 or v3) and print its header, every key/value pair\n"
            "(long arrays and strings shortened) and the tensor table: index, name, type,\n"
            "shape, offset in the data section and size in bytes.\n"
            "A package directory (npullm compile -o PKG): its target, SoC, context, chunk and\n"
            "decode buckets, then what each context binary holds as the target reads it\n"
            "(qnn-htp: libQnnSystem's binary info): the SoC / HTP arch and every graph with\n"
            "its input and output tensors.\n"
            "\n"
            "exit status: 0 on success, 1 if the file is not a valid GGUF file, 2 on usage errors\n");
}

int npl_cmd_inspect(int argc, char **argv) {
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (argv[i][0] == '-' && argv[i][1] && strcmp(argv[i], "--")) {
            fprintf(stderr, "npullm inspect: unknown flag %s (npullm inspect --help lists the flags)\n", argv[i]);
            return 2;
        }
        if (!strcmp(argv[i], "--") && i + 1 < argc) i++;
        if (file) {
            fprintf(stderr, "npullm inspect: expected one FILE, got '%s' and '%s'\n", file, argv[i]);
            return 2;
        }
        file = argv[i];
    }
    if (!file) {
        fprintf(stderr, "npullm inspect: FILE is required (npullm inspect --help)\n");
        return 2;
    }
    struct stat sb;
    if (!stat(file, &sb) && S_ISDIR(sb.st_mode)) return npl_cmd_inspect_package(file);
    char err[512];
    npl_gguf_file *g = npl_gguf_file_open(file, NULL, err, sizeof err);
    if (!g) {
        fprintf(stderr, "npullm inspect: %s\n", err);
        return 1;
    }
    npl_status st = npl_gguf_file_print(g, stdout);
    npl_gguf_file_close(g);
    if (st != NPL_OK || fflush(stdout)) {
        fprintf(stderr, "npullm inspect: error writing to stdout\n");
        return 1;
    }
    return 0;
}
