/* Weight-shared context binary size: G graphs (M = Ms...) each one FullyConnected
 * x[M,K] . W[N,K]^T with the same int8 per-channel STATIC weight (same name, same bytes).
 * usage: p8_share K N WS ACT M1 [M2 ...]   ACT f16 | u16 ; SM8650 v75. Prints binary size vs K*N. */
#include "qnnu.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>
static float frand(unsigned* s) { *s = *s * 1103515245u + 12345u; return ((*s >> 8) & 0xffff) / 32768.0f - 1.0f; }
int main(int argc, char** argv) {
  if (argc < 6) return 2;
  int K = atoi(argv[1]), N = atoi(argv[2]), ws = atoi(argv[3]); int u16 = !strcmp(argv[4], "u16");
  if (qnnu_load(qnnu_path("libQnnHtp.so"))) return 1;
  Qnn_BackendHandle_t be; Qnn_DeviceHandle_t dev; Qnn_ContextHandle_t ctx;
  if (qnnu_setup(57, 75, 1, &be, &dev)) return 1;
  if (qnnu_context(be, dev, ws, &ctx)) return 1;
  unsigned s = 7; int8_t* W = malloc((size_t)K * N); Qnn_ScaleOffset_t* so = malloc(sizeof(*so) * N);
  for (long i = 0; i < (long)K * N; i++) W[i] = (int8_t)lrintf(frand(&s) * 127);
  for (int n = 0; n < N; n++) { so[n].scale = 0.001f * (1 + n % 7); so[n].offset = 0; }
  for (int gi = 5; gi < argc; gi++) {
    int M = atoi(argv[gi]); char name[32]; snprintf(name, sizeof name, "g%d", M);
    Qnn_GraphHandle_t g; if (qnnu_graph(ctx, name, 0, &g)) return 1;
    uint32_t ad[2] = {M, K}, cd[2] = {M, N}, wd[2] = {N, K};
    uint32_t dt = u16 ? QNN_DATATYPE_UFIXED_POINT_16 : QNN_DATATYPE_FLOAT_16;
    Qnn_Tensor_t A = mk_tensor("A", QNN_TENSOR_TYPE_APP_WRITE, dt, 2, ad), C = mk_tensor("C", QNN_TENSOR_TYPE_APP_READ, dt, 2, cd);
    if (u16) { set_scale_offset(&A, 2.0f / 65535, -32768); set_scale_offset(&C, 64.0f / 65535, -32768); }
    Qnn_Tensor_t B = mk_tensor("W", QNN_TENSOR_TYPE_STATIC, QNN_DATATYPE_SFIXED_POINT_8, 2, wd);
    B.v2.quantizeParams.encodingDefinition = QNN_DEFINITION_DEFINED; B.v2.quantizeParams.quantizationEncoding = QNN_QUANTIZATION_ENCODING_AXIS_SCALE_OFFSET;
    B.v2.quantizeParams.axisScaleOffsetEncoding.axis = 0; B.v2.quantizeParams.axisScaleOffsetEncoding.numScaleOffsets = N; B.v2.quantizeParams.axisScaleOffsetEncoding.scaleOffset = so;
    set_buf(&B, W, K * N);
    CK(Q->tensorCreateGraphTensor(g, &A)); CK(Q->tensorCreateGraphTensor(g, &B)); CK(Q->tensorCreateGraphTensor(g, &C));
    Qnn_Tensor_t ins[2] = {A, B}, outs[1] = {C};
    Qnn_OpConfig_t op = mk_op("fc", "FullyConnected", NULL, 0, ins, 2, outs, 1);
    CK(Q->graphAddNode(g, op));
    CK(Q->graphFinalize(g, NULL, NULL));
  }
  Qnn_ContextBinarySize_t bsz = 0; CK(Q->contextGetBinarySize(ctx, &bsz));
  void* buf = malloc(bsz); Qnn_ContextBinarySize_t wr = 0; CK(Q->contextGetBinary(ctx, buf, bsz, &wr));
  printf("RESULT K=%d N=%d ws=%d act=%s graphs=%d: binary %llu (written %llu) weights %d ratio %.3f\n", K, N, ws, argv[4], argc - 5,
         (unsigned long long)bsz, (unsigned long long)wr, K * N, (double)wr / ((double)K * N));
  return 0;
}
