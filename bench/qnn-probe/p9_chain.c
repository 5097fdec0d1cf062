/* Binary size of one graph: a chain of L FullyConnected x[M,D] . W_i[D,D]^T (int8 per channel,
 * distinct weights), optionally with an RmsNorm-free ElementWiseAdd residual per step.
 * usage: p9_chain D L M ACT(f16|u16) [ws] [N2: alternate D->N2->D] ; SM8650 v75 */
#include "qnnu.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>
static float frand(unsigned* s) { *s = *s * 1103515245u + 12345u; return ((*s >> 8) & 0xffff) / 32768.0f - 1.0f; }
int main(int argc, char** argv) {
  int D = atoi(argv[1]), L = atoi(argv[2]), M = atoi(argv[3]); int u16 = !strcmp(argv[4], "u16"); int ws = argc > 5 ? atoi(argv[5]) : 0;
  int N2 = argc > 6 ? atoi(argv[6]) : D;
  if (qnnu_load(qnnu_path("libQnnHtp.so"))) return 1;
  Qnn_BackendHandle_t be; Qnn_DeviceHandle_t dev; Qnn_ContextHandle_t ctx; Qnn_GraphHandle_t g;
  if (qnnu_setup(57, 75, 1, &be, &dev)) return 1;
  if (qnnu_context(be, dev, ws, &ctx)) return 1;
  if (qnnu_graph(ctx, "chain", 0, &g)) return 1;
  uint32_t dt = u16 ? QNN_DATATYPE_UFIXED_POINT_16 : QNN_DATATYPE_FLOAT_16;
  unsigned s = 7; long wtot = 0;
  char nm[64];
  uint32_t* dims = malloc(sizeof(uint32_t) * 2 * (L + 1));
  dims[0] = M; dims[1] = D;
  Qnn_Tensor_t x = mk_tensor("x", QNN_TENSOR_TYPE_APP_WRITE, dt, 2, dims);
  if (u16) set_scale_offset(&x, 2.0f / 65535, -32768);
  CK(Q->tensorCreateGraphTensor(g, &x));
  int cur = D;
  for (int i = 0; i < L; i++) {
    int out = (i % 2 == 0) ? N2 : D; if (i == L - 1) out = out; 
    int8_t* W = malloc((size_t)cur * out); Qnn_ScaleOffset_t* so = malloc(sizeof(*so) * out);
    for (long j = 0; j < (long)cur * out; j++) W[j] = (int8_t)lrintf(frand(&s) * 127);
    for (int n = 0; n < out; n++) { so[n].scale = 0.001f * (1 + n % 7); so[n].offset = 0; }
    uint32_t* wd = malloc(8); wd[0] = out; wd[1] = cur;
    snprintf(nm, sizeof nm, "W%d", i); char* wn = strdup(nm);
    Qnn_Tensor_t B = mk_tensor(wn, QNN_TENSOR_TYPE_STATIC, QNN_DATATYPE_SFIXED_POINT_8, 2, wd);
    B.v2.quantizeParams.encodingDefinition = QNN_DEFINITION_DEFINED; B.v2.quantizeParams.quantizationEncoding = QNN_QUANTIZATION_ENCODING_AXIS_SCALE_OFFSET;
    B.v2.quantizeParams.axisScaleOffsetEncoding.axis = 0; B.v2.quantizeParams.axisScaleOffsetEncoding.numScaleOffsets = out; B.v2.quantizeParams.axisScaleOffsetEncoding.scaleOffset = so;
    set_buf(&B, W, cur * out); wtot += (long)cur * out;
    uint32_t* yd = dims + 2 * (i + 1); yd[0] = M; yd[1] = out;
    snprintf(nm, sizeof nm, "y%d", i); char* yn = strdup(nm);
    Qnn_Tensor_t y = mk_tensor(yn, i == L - 1 ? QNN_TENSOR_TYPE_APP_READ : QNN_TENSOR_TYPE_NATIVE, dt, 2, yd);
    if (u16) set_scale_offset(&y, 64.0f / 65535, -32768);
    CK(Q->tensorCreateGraphTensor(g, &B)); CK(Q->tensorCreateGraphTensor(g, &y));
    Qnn_Tensor_t ins[2] = {x, B}, outs[1] = {y};
    snprintf(nm, sizeof nm, "fc%d", i);
    Qnn_OpConfig_t op = mk_op(strdup(nm), "FullyConnected", NULL, 0, ins, 2, outs, 1);
    CK(Q->graphAddNode(g, op));
    x = y; cur = out;
  }
  double t0 = now_ms(); CK(Q->graphFinalize(g, NULL, NULL)); double tf = now_ms() - t0;
  Qnn_ContextBinarySize_t bsz = 0; CK(Q->contextGetBinarySize(ctx, &bsz));
  void* buf = malloc(bsz); Qnn_ContextBinarySize_t wr = 0; CK(Q->contextGetBinary(ctx, buf, bsz, &wr));
  printf("RESULT D=%d N2=%d L=%d M=%d act=%s: binary %llu weights %ld extra %ld (%.0f per op) ratio %.4f finalize %.0f ms\n", D, N2, L, M, argv[4],
         (unsigned long long)wr, wtot, (long)wr - wtot, ((double)wr - wtot) / L, (double)wr / wtot, tf);
  return 0;
}
