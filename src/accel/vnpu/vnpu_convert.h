/* vnpu element conversions between tensors of any float-valued type
 * (F32, F16, BF16, Q4_0/Q8_0 rows, quantized INT8/UINT8/INT16/INT32 with
 * float = (q + offset) * scale) and f32. */
#ifndef NPL_VNPU_CONVERT_H
#define NPL_VNPU_CONVERT_H
#include "accel/vnpu/vnpu.h"

/* out[i] = element i0 + i of t (data = the tensor's bytes), i < n. For
 * block types, i0 and n must be multiples of the block (whole rows). */
void vnpu_to_f32(const vnpu_tensor *t, const void *data, int64_t i0, int64_t n, float *out);
/* Element i0 + i of t = in[i], rounded / saturated; quantized types use
 * their per-tensor params. */
void vnpu_from_f32(const vnpu_tensor *t, const float *in, int64_t i0, int64_t n, void *data);

#endif
