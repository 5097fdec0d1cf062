/* vnpu element conversions between tensors of any float-valued type
 * (F32, F16, BF16, Q4_0/Q8_0 rows, quantized INT8/UINT8/INT16/INT32 with
 * float = (q + offset) * scale) and f32. */
#ifndef NPL_VNPU_CONVERT_H
#define NPL_VNPU_CONVERT_H
#include "accel/vnpu/vnpu.h"

/* Dynamic int16 (NPL_ACCEL_QUANT_DYNAMIC): the int16 values of all
 * elements, then, from byte vnpu_dyn_scale_off(t), one f32 scale per block
 * of t->q.block elements. Reading takes any range; writing takes whole
 * blocks (every writer converts whole rows or chunks of 16384 elements, and
 * a block is a power of two up to 1024 dividing the last dimension). */
static inline int vnpu_is_dynamic(const vnpu_tensor *t) { return t->q.enc == NPL_ACCEL_QUANT_DYNAMIC; }
size_t vnpu_dyn_scale_off(int64_t nelem);
/* Checks desc-level params of a DYNAMIC encoding into dst (vnpu_quant_copy). */
npl_accel_status vnpu_dyn_quant(struct npl_accel_backend *be, vnpu_quant *dst, const npl_accel_quant *q,
                                uint32_t dtype, uint32_t rank, const int64_t *dims, const char *tname);
/* Kind check and byte size of a tensor with a DYNAMIC encoding. */
npl_accel_status vnpu_dyn_tensor(struct npl_accel_backend *be, uint32_t kind, const vnpu_quant *q, uint32_t rank,
                                 const int64_t *dims, size_t *nbytes, const char *tname);

/* out[i] = element i0 + i of t (data = the tensor's bytes), i < n. For
 * block types, i0 and n must be multiples of the block (whole rows). */
void vnpu_to_f32(const vnpu_tensor *t, const void *data, int64_t i0, int64_t n, float *out);
/* Element i0 + i of t = in[i], rounded / saturated; quantized types use
 * their per-tensor params. */
void vnpu_from_f32(const vnpu_tensor *t, const float *in, int64_t i0, int64_t n, void *data);

#endif
