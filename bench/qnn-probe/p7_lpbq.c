/* LPBQ FullyConnected probe with block-varying weight magnitudes.
 * usage: p7_lpbq M K N LAYOUT [soc arch] [act]
 *   LAYOUT cm: blocksScale8[n*nb+b] (channel-major), bm: [b*N+n] (block-major)
 *   act: u16 (default) | u8
 * Weights: W[n][k] = u * 2^-(r(n,b) % 4), u uniform(-0.5,0.5), so block scales
 * take all of 1..15 and a wrong layout shows as a large error. */
#include "qnnu.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>
static float frand(unsigned* s) { *s = *s * 1103515245u + 12345u; return ((*s >> 8) & 0xffff) / 32768.0f - 1.0f; }
static unsigned irand(unsigned* s) { *s = *s * 1103515245u + 12345u; return (*s >> 12) & 0xfffff; }
int main(int argc, char** argv) {
  if (argc < 5) { fprintf(stderr, "usage\n"); return 2; }
  int M = atoi(argv[1]), K = atoi(argv[2]), N = atoi(argv[3]); const char* LAY = argv[4];
  uint32_t soc = argc > 6 ? atoi(argv[5]) : 57, arch = argc > 6 ? atoi(argv[6]) : 75;
  int u8 = argc > 7 && !strcmp(argv[7], "u8");
  int bm = !strcmp(LAY, "bm");
  if (qnnu_load(qnnu_path("libQnnHtp.so"))) return 1;
  Qnn_BackendHandle_t be; Qnn_DeviceHandle_t dev; Qnn_ContextHandle_t ctx; Qnn_GraphHandle_t g;
  if (qnnu_setup(soc, arch, 1, &be, &dev)) return 1;
  if (qnnu_context(be, dev, 0, &ctx)) return 1;
  if (qnnu_graph(ctx, "mm", 0, &g)) return 1;
  unsigned seed = getenv("SEED") ? (unsigned)atoi(getenv("SEED")) : 1234u;
  const int BLK = 32, nb = K / BLK;
  float* Wf = malloc(sizeof(float) * K * N); /* [n][k] */
  for (int n = 0; n < N; n++) for (int b = 0; b < nb; b++) { float f = ldexpf(1.0f, -(int)(irand(&seed) % 4));
    for (int k = b * BLK; k < (b + 1) * BLK; k++) Wf[n * K + k] = frand(&seed) * 0.5f * f; }
  float* chs = malloc(sizeof(float) * N); Qnn_ScaleOffset_t* so = malloc(sizeof(Qnn_ScaleOffset_t) * N);
  uint8_t* bs = malloc(N * nb); int8_t* Wq = malloc(K * N); float* Wd = malloc(sizeof(float) * K * N);
  int hist[16] = {0};
  for (int n = 0; n < N; n++) {
    float m = 0; for (int k = 0; k < K; k++) if (fabsf(Wf[n * K + k]) > m) m = fabsf(Wf[n * K + k]);
    chs[n] = m / (7 * 15.0f); so[n].scale = chs[n]; so[n].offset = 0;
    for (int b = 0; b < nb; b++) { float mb = 0; for (int k = b * BLK; k < (b + 1) * BLK; k++) if (fabsf(Wf[n * K + k]) > mb) mb = fabsf(Wf[n * K + k]);
      int s = (int)ceilf(mb / (7 * chs[n]) - 1e-4f); if (s < 1) s = 1; if (s > 15) s = 15; hist[s]++;
      bs[bm ? b * N + n : n * nb + b] = (uint8_t)s;
      for (int k = b * BLK; k < (b + 1) * BLK; k++) { float d = chs[n] * s; int q = (int)lrintf(Wf[n * K + k] / d); if (q > 7) q = 7; if (q < -8) q = -8; Wq[n * K + k] = (int8_t)q; Wd[n * K + k] = q * d; } }
  }
  printf("block scales used:"); for (int i = 1; i < 16; i++) printf(" %d:%d", i, hist[i]); printf("\n");
  uint32_t wdims[2] = {N, K};
  Qnn_Tensor_t B = mk_tensor("B", QNN_TENSOR_TYPE_STATIC, QNN_DATATYPE_SFIXED_POINT_8, 2, wdims);
  static Qnn_BlockwiseExpansion_t bwe; bwe.axis = 0; bwe.scaleOffsets = so; bwe.numBlocksPerAxis = nb; bwe.blockScaleBitwidth = 4;
  bwe.blockScaleStorageType = QNN_BLOCKWISE_EXPANSION_BITWIDTH_SCALE_STORAGE_8; bwe.blocksScale8 = bs;
  B.v2.quantizeParams.encodingDefinition = QNN_DEFINITION_DEFINED; B.v2.quantizeParams.quantizationEncoding = QNN_QUANTIZATION_ENCODING_BLOCKWISE_EXPANSION;
  B.v2.quantizeParams.blockwiseExpansion = &bwe;
  set_buf(&B, Wq, K * N);
  float* Af = malloc(4 * M * K); for (int i = 0; i < M * K; i++) Af[i] = frand(&seed);
  float* Ad = malloc(4 * M * K);
  float as = u8 ? 2.0f / 255 : 2.0f / 65535; int32_t ao = u8 ? -128 : -32768; int qmaxa = u8 ? 255 : 65535;
  uint16_t* p16 = malloc(2 * M * K); uint8_t* p8 = malloc(M * K);
  for (int i = 0; i < M * K; i++) { int q = (int)lrintf(Af[i] / as) - ao; if (q < 0) q = 0; if (q > qmaxa) q = qmaxa; p16[i] = q; p8[i] = q; Ad[i] = (q + ao) * as; }
  float* R = calloc(M * N, 4); float rmax = 0; double rss = 0;
  for (int m = 0; m < M; m++) for (int n = 0; n < N; n++) { double s = 0; for (int k = 0; k < K; k++) s += (double)Ad[m * K + k] * Wd[n * K + k]; R[m * N + n] = s; rss += s * s; if (fabs(s) > rmax) rmax = fabs(s); }
  float os = 2 * rmax / qmaxa * 1.05f; int32_t oo = ao;
  uint32_t adims[2] = {M, K}, cdims[2] = {M, N};
  uint32_t adt = u8 ? QNN_DATATYPE_UFIXED_POINT_8 : QNN_DATATYPE_UFIXED_POINT_16;
  Qnn_Tensor_t A = mk_tensor("A", QNN_TENSOR_TYPE_APP_WRITE, adt, 2, adims);
  Qnn_Tensor_t C = mk_tensor("C", QNN_TENSOR_TYPE_APP_READ, adt, 2, cdims);
  set_scale_offset(&A, as, ao); set_scale_offset(&C, os, oo);
  CK(Q->tensorCreateGraphTensor(g, &A)); CK(Q->tensorCreateGraphTensor(g, &B)); CK(Q->tensorCreateGraphTensor(g, &C));
  Qnn_Tensor_t ins[2] = {A, B}, outs[1] = {C};
  Qnn_OpConfig_t op = mk_op("fc0", "FullyConnected", NULL, 0, ins, 2, outs, 1);
  CK(Q->graphAddNode(g, op));
  double t0 = now_ms(); Qnn_ErrorHandle_t fe = Q->graphFinalize(g, NULL, NULL); double tf = now_ms() - t0;
  if (fe != QNN_SUCCESS) { printf("RESULT M=%d K=%d N=%d lay=%s FINALIZE_FAIL %llu (%.0f ms)\n", M, K, N, LAY, (unsigned long long)fe, tf); return 0; }
  Qnn_ContextBinarySize_t bsz = 0; Q->contextGetBinarySize(ctx, &bsz);
  uint32_t obytes = (u8 ? 1 : 2) * M * N; void* obuf = calloc(obytes, 1);
  Qnn_Tensor_t ein[1] = {A}, eout[1] = {C}; set_buf(&ein[0], u8 ? (void*)p8 : (void*)p16, (u8 ? 1 : 2) * M * K); set_buf(&eout[0], obuf, obytes);
  t0 = now_ms(); CK(Q->graphExecute(g, ein, 1, eout, 1, NULL, NULL)); double te = now_ms() - t0;
  double me = 0, se = 0;
  for (int i = 0; i < M * N; i++) { float o = ((u8 ? ((uint8_t*)obuf)[i] : ((uint16_t*)obuf)[i]) + oo) * os; double d = fabs(o - R[i]); se += d * d; if (d > me) me = d; }
  if (getenv("DIAG")) { int G = atoi(getenv("DIAG")); for (int c0 = 0; c0 < N; c0 += G) { double e2 = 0, r2 = 0, dot = 0, o2 = 0;
      for (int m = 0; m < M; m++) for (int n = c0; n < c0 + G && n < N; n++) { int i = m * N + n; float o = ((u8 ? ((uint8_t*)obuf)[i] : ((uint16_t*)obuf)[i]) + oo) * os; e2 += (o - R[i]) * (o - R[i]); r2 += R[i] * R[i]; dot += o * R[i]; o2 += o * o; }
      printf("  ch %4d..: rel %.3g corr %.3f |o|/|r| %.3f\n", c0, sqrt(e2 / r2), dot / sqrt(r2 * o2 + 1e-30), sqrt(o2 / r2)); } }
  printf("RESULT M=%d K=%d N=%d lay=%s act=%s: max_abs_err=%.5g rel_rms=%.3g (ref max %.3f, out step %.3g) finalize=%.0fms exec=%.0fms bin=%llu\n",
         M, K, N, LAY, u8 ? "u8" : "u16", me, sqrt(se / (rss > 0 ? rss : 1)), rmax, os, tf, te, (unsigned long long)bsz);
  Q->contextFree(ctx, NULL); if (dev) Q->deviceFree(dev); Q->backendFree(be);
  return 0;
}
