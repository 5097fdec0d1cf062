/* record: an implementation of the accelerator ABI (include/npullm_accel.h)
 * that computes nothing and writes everything it is given — contexts,
 * graphs, tensors with kinds / types / shapes / quant params and STATIC
 * bytes, nodes with their params, which graphs were finalized — to a GGUF
 * file, on every graph finalize and on context / backend free. Replaying
 * the file into any implementation rebuilds the same contexts and graphs:
 * the role of MNN's QNNConvertor in its QNN export.
 *
 * The file: GGUF metadata arrays "accel.graph.*", "accel.tensor.*",
 * "accel.node.*", "accel.param.*" (one element per record, in creation
 * order) and one GGUF tensor "accel.data.<i>" (raw bytes, type i8) per
 * STATIC tensor. */
#ifndef NPL_ACCEL_RECORD_H
#define NPL_ACCEL_RECORD_H
#include <stddef.h>
#include <stdint.h>

#include "npullm_accel.h"

/* The record table for `requested_version` (NULL if not served).
 * Backend options: path (required) = the file to write.
 * execute does nothing and succeeds (like MNN's convert mode); binaries,
 * binary info and context tensor data are ERR_UNSUPPORTED. validate_node
 * accepts every node it could record (well-formed descriptions; the op is
 * the replay target's to judge), list_ops is ERR_UNSUPPORTED (no op set of
 * its own) and backend_create_on_pool ignores the pool (nothing runs). */
const npl_accel_api *npl_record_get_api(uint32_t requested_version);

/* Contexts in a record file; -1 with a message in err. */
int64_t npl_accel_record_n_contexts(const char *record_path, char *err, size_t errlen);

/* Rebuilds context `context_index` of the record in `target` (on backend be
 * and device dev, which may be NULL): creates the context, its graphs,
 * tensors (STATIC and APP_READWRITE ones as context tensors) and nodes, and
 * finalizes the graphs that were finalized, in the same order. On failure
 * returns the target's status (or ERR_IO / ERR_BINARY_CORRUPT for the file)
 * with a message in err; *out is NULL. */
npl_accel_status npl_accel_replay(const char *record_path, const npl_accel_api *target, npl_accel_backend *be,
                                  npl_accel_device *dev, uint32_t context_index, npl_accel_context **out, char *err,
                                  size_t errlen);

#endif
