/* One static int8 table W[N][K] read by BOTH a FullyConnected (x[1,K] . W^T -> logits[1,N])
 * and a row lookup (ids[T] -> rows [T,K] fp16): is it stored once in the context binary?
 * usage: p11_tied N K MODE [ws] [T]     fp16 activations, SM8650 v75
 *  MODE fc     : FullyConnected only (baseline)
 *       gpt    : Gather only, per-tensor int8 W -> int8 rows -> Dequantize fp16 (baseline)
 *       gpcraw : Gather only, per-axis int8 W, rows out per-tensor scale 1 (raw ints?) -> Cast f16 x gathered scale
 *       pt     : fc + gpt on the same tensor (per-tensor W)
 *       pc     : fc + Gather on the same per-axis W, rows fp16 straight out of the Gather
 *       pcdq   : fc + Gather on the same per-axis W, rows int8 (axis enc copied) -> Dequantize fp16
 *       pcraw  : fc + gpcraw on the same tensor
 *       f16tab : fc + Gather on a separate fp16 table [N,K] (what a second copy costs)
 *       onehot : fc + MatMul(onehot[T,N] fp16, W[N,K]) on the same tensor
 *       ptrs   : per-channel values in a per-tensor int8 W (scale g = min row scale): FullyConnected then
 *                x static fp16 r[N] = s_n / g; Gather -> Dequantize -> x Gather(r, ids) (per-channel math, one table)
 * Prints binary size against N*K, max abs error of logits and rows against double references. */
#include "qnnu.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>
/* a 64-bit LCG's high bits: the 32-bit one of p8 repeats every 2^24 values, and
 * the HTP stored a repeating 262144 x 640 FullyConnected weight in half its bytes */
static float frand(unsigned long long* s) { *s = *s * 6364136223846793005ull + 1442695040888963407ull; return ((*s >> 40) & 0xffff) / 32768.0f - 1.0f; }
static Qnn_Tensor_t wtensor(const char* name, int N, int K, int pc, int8_t* W, Qnn_ScaleOffset_t* so, float gs) {
  uint32_t wd[2] = {N, K};
  Qnn_Tensor_t B = mk_tensor(name, QNN_TENSOR_TYPE_STATIC, QNN_DATATYPE_SFIXED_POINT_8, 2, wd);
  if (pc) {
    B.v2.quantizeParams.encodingDefinition = QNN_DEFINITION_DEFINED; B.v2.quantizeParams.quantizationEncoding = QNN_QUANTIZATION_ENCODING_AXIS_SCALE_OFFSET;
    B.v2.quantizeParams.axisScaleOffsetEncoding.axis = 0; B.v2.quantizeParams.axisScaleOffsetEncoding.numScaleOffsets = N; B.v2.quantizeParams.axisScaleOffsetEncoding.scaleOffset = so;
  } else set_scale_offset(&B, gs, 0);
  set_buf(&B, W, (uint32_t)N * K);
  return B;
}
int main(int argc, char** argv) {
  if (argc < 4) { fprintf(stderr, "usage: p11_tied N K MODE [ws] [T]\n"); return 2; }
  int N = atoi(argv[1]), K = atoi(argv[2]); const char* MODE = argv[3]; int ws = argc > 4 ? atoi(argv[4]) : 0; int T = argc > 5 ? atoi(argv[5]) : 4;
  int has_fc = strcmp(MODE, "gpt") && strcmp(MODE, "gpcraw");
  int has_g = strcmp(MODE, "fc") != 0;
  int ptrs = !strcmp(MODE, "ptrs"); int pc = strcmp(MODE, "pt") && strcmp(MODE, "gpt") && !ptrs;
  if (qnnu_load(qnnu_path("libQnnHtp.so"))) return 1;
  Qnn_BackendHandle_t be; Qnn_DeviceHandle_t dev; Qnn_ContextHandle_t ctx; Qnn_GraphHandle_t g;
  if (qnnu_setup(57, 75, 1, &be, &dev)) return 1;
  if (qnnu_context(be, dev, ws, &ctx)) return 1;
  if (qnnu_graph(ctx, "tied", 0, &g)) return 1;
  unsigned long long s = 7; int8_t* W = malloc((size_t)K * N); Qnn_ScaleOffset_t* so = malloc(sizeof(*so) * N);
  float* sc = malloc(sizeof(float) * N); uint16_t* sch = malloc(2 * N);
  for (long i = 0; i < (long)K * N; i++) W[i] = (int8_t)lrintf(frand(&s) * 127);
  float gs = 4.0f / 1024;
  for (int n = 0; n < N; n++) { /* scales exact in fp16, so the raw-rows variant's fp16 scale table is exact too */
    sc[n] = pc || ptrs ? (1 + n % 7) / 1024.0f : gs; so[n].scale = sc[n]; so[n].offset = 0; sch[n] = f2h(sc[n]); }
  int32_t* ids = malloc(4 * T); for (int t = 0; t < T; t++) ids[t] = (int32_t)(((unsigned)t * 2654435761u) % N); ids[0] = N - 1;
  uint32_t F16 = QNN_DATATYPE_FLOAT_16;
  if (ptrs) gs = 1 / 1024.0f; /* min row scale: the FC's raw output is at most the logits' magnitude */
  uint16_t* rsc = malloc(2 * N); for (int n = 0; n < N; n++) rsc[n] = f2h(sc[n] / gs);
  Qnn_Tensor_t rt_shared; memset(&rt_shared, 0, sizeof rt_shared);
  Qnn_Tensor_t Wt = wtensor("W", N, K, pc, W, so, gs); CK(Q->tensorCreateGraphTensor(g, &Wt));
  uint32_t xd[2] = {1, K}, ld[2] = {1, N}, rd[2] = {T, K}, idd[1] = {T};
  Qnn_Tensor_t x = mk_tensor("x", QNN_TENSOR_TYPE_APP_WRITE, F16, 2, xd), lo = mk_tensor("logits", QNN_TENSOR_TYPE_APP_READ, F16, 2, ld);
  Qnn_Tensor_t id = mk_tensor("ids", QNN_TENSOR_TYPE_APP_WRITE, QNN_DATATYPE_INT_32, 1, idd), rows = mk_tensor("rows", QNN_TENSOR_TYPE_APP_READ, F16, 2, rd);
  Qnn_Tensor_t gin[8]; int ngin = 0, ngout = 0; Qnn_Tensor_t gout[4];
  if (has_fc) {
    CK(Q->tensorCreateGraphTensor(g, &x)); CK(Q->tensorCreateGraphTensor(g, &lo));
    Qnn_Tensor_t in[2] = {x, Wt};
    if (getenv("P11_VALIDATE")) { Qnn_ErrorHandle_t e = Q->backendValidateOpConfig(be, mk_op("fc", "FullyConnected", NULL, 0, in, 2, &lo, 1));
      printf("validate FullyConnected f16 x int8 (%s) -> f16: %llu (%s)\n", pc ? "per-axis" : "per-tensor", (unsigned long long)e, qerr(e)); }
    if (!ptrs) CK(Q->graphAddNode(g, mk_op("fc", "FullyConnected", NULL, 0, in, 2, &lo, 1)));
    else {
      Qnn_Tensor_t l0 = mk_tensor("l0", QNN_TENSOR_TYPE_NATIVE, F16, 2, ld); uint32_t rd1[1] = {N};
      Qnn_Tensor_t rt = mk_tensor("rsc", QNN_TENSOR_TYPE_STATIC, F16, 1, rd1); set_buf(&rt, rsc, 2 * N);
      CK(Q->tensorCreateGraphTensor(g, &l0)); CK(Q->tensorCreateGraphTensor(g, &rt)); rt_shared = rt;
      CK(Q->graphAddNode(g, mk_op("fc", "FullyConnected", NULL, 0, in, 2, &l0, 1)));
      Qnn_Tensor_t in2[2] = {l0, rt};
      if (getenv("P11_NOMUL")) CK(Q->graphAddNode(g, mk_op("fcs", "Reshape", NULL, 0, in2, 1, &lo, 1)));
      else if (getenv("P11_MULSHAPE")) { /* same-shape multiply on [N/C, C] (no broadcast) */
        /* P11_MULSHAPE=C: [N/C, C]; =H,W,C: [1, H, W, C] (H*W*C = N) */
        uint32_t* md = malloc(16); uint32_t r = 2; int h = 0, w = 0, c = 0;
        if (sscanf(getenv("P11_MULSHAPE"), "%d,%d,%d", &h, &w, &c) == 3) { r = 4; md[0] = 1; md[1] = h; md[2] = w; md[3] = c; }
        else { md[1] = atoi(getenv("P11_MULSHAPE")); md[0] = N / md[1]; }
        Qnn_Tensor_t a = mk_tensor("l0r", QNN_TENSOR_TYPE_NATIVE, F16, r, md), b = mk_tensor("l1r", QNN_TENSOR_TYPE_NATIVE, F16, r, md);
        Qnn_Tensor_t m = mk_tensor("rscm", QNN_TENSOR_TYPE_STATIC, F16, r, md); set_buf(&m, rsc, 2 * N);
        CK(Q->tensorCreateGraphTensor(g, &a)); CK(Q->tensorCreateGraphTensor(g, &b)); CK(Q->tensorCreateGraphTensor(g, &m));
        CK(Q->graphAddNode(g, mk_op("fcr", "Reshape", NULL, 0, &l0, 1, &a, 1)));
        Qnn_Tensor_t in4[2] = {a, m}; CK(Q->graphAddNode(g, mk_op("fcs", "ElementWiseMultiply", NULL, 0, in4, 2, &b, 1)));
        CK(Q->graphAddNode(g, mk_op("fcr2", "Reshape", NULL, 0, &b, 1, &lo, 1)));
      }
      else CK(Q->graphAddNode(g, mk_op("fcs", "ElementWiseMultiply", NULL, 0, in2, 2, &lo, 1)));
    }
    gin[ngin++] = x; gout[ngout++] = lo;
  }
  if (has_g) {
    if (strcmp(MODE, "onehot")) CK(Q->tensorCreateGraphTensor(g, &id));
    CK(Q->tensorCreateGraphTensor(g, &rows)); gin[ngin++] = id; gout[ngout++] = rows;
    Qnn_Param_t ax = scalar_param_i32("axis", 0);
    if (!strcmp(MODE, "pc")) { Qnn_Tensor_t in[2] = {Wt, id}; CK(Q->graphAddNode(g, mk_op("gather", "Gather", &ax, 1, in, 2, &rows, 1))); }
    else if (!strcmp(MODE, "pt") || !strcmp(MODE, "gpt") || !strcmp(MODE, "pcdq")) {
      Qnn_Tensor_t r8 = mk_tensor("r8", QNN_TENSOR_TYPE_NATIVE, QNN_DATATYPE_SFIXED_POINT_8, 2, rd);
      if (!strcmp(MODE, "pcdq")) r8.v2.quantizeParams = Wt.v2.quantizeParams; else set_scale_offset(&r8, gs, 0);
      CK(Q->tensorCreateGraphTensor(g, &r8));
      Qnn_Tensor_t in[2] = {Wt, id}; CK(Q->graphAddNode(g, mk_op("gather", "Gather", &ax, 1, in, 2, &r8, 1)));
      CK(Q->graphAddNode(g, mk_op("dq", "Dequantize", NULL, 0, &r8, 1, &rows, 1)));
    } else if (!strcmp(MODE, "pcraw") || !strcmp(MODE, "gpcraw")) {
      /* raw int8 rows (scale 1) -> fp16, times the row's scale gathered from an fp16 [N,1] table */
      Qnn_Tensor_t r8 = mk_tensor("r8", QNN_TENSOR_TYPE_NATIVE, QNN_DATATYPE_SFIXED_POINT_8, 2, rd); set_scale_offset(&r8, 1.0f, 0);
      Qnn_Tensor_t rh = mk_tensor("rh", QNN_TENSOR_TYPE_NATIVE, F16, 2, rd);
      uint32_t sd[2] = {N, 1}, gsd[2] = {T, 1};
      Qnn_Tensor_t st = mk_tensor("scales", QNN_TENSOR_TYPE_STATIC, F16, 2, sd); set_buf(&st, sch, 2 * N);
      Qnn_Tensor_t gsc = mk_tensor("gsc", QNN_TENSOR_TYPE_NATIVE, F16, 2, gsd);
      CK(Q->tensorCreateGraphTensor(g, &r8)); CK(Q->tensorCreateGraphTensor(g, &rh)); CK(Q->tensorCreateGraphTensor(g, &st)); CK(Q->tensorCreateGraphTensor(g, &gsc));
      Qnn_Tensor_t in[2] = {Wt, id}; CK(Q->graphAddNode(g, mk_op("gather", "Gather", &ax, 1, in, 2, &r8, 1)));
      CK(Q->graphAddNode(g, mk_op("cast", "Cast", NULL, 0, &r8, 1, &rh, 1)));
      Qnn_Tensor_t in2[2] = {st, id}; CK(Q->graphAddNode(g, mk_op("gathers", "Gather", &ax, 1, in2, 2, &gsc, 1)));
      Qnn_Tensor_t in3[2] = {rh, gsc}; CK(Q->graphAddNode(g, mk_op("mul", "ElementWiseMultiply", NULL, 0, in3, 2, &rows, 1)));
    } else if (ptrs) {
      Qnn_Tensor_t r8 = mk_tensor("r8", QNN_TENSOR_TYPE_NATIVE, QNN_DATATYPE_SFIXED_POINT_8, 2, rd); set_scale_offset(&r8, gs, 0);
      Qnn_Tensor_t rh = mk_tensor("rh", QNN_TENSOR_TYPE_NATIVE, F16, 2, rd);
      /* the row scales: a 1-D [N] table (an [N, 1] one is stored padded: +0.1 N*K at N = 4096),
       * the same static tensor as the FC's output multiplier; gathered [T] then reshaped [T, 1] */
      uint32_t sd[1] = {N}, gsd[2] = {T, 1}, gs1[1] = {T};
      Qnn_Tensor_t st = getenv("P11_SCALE2D") ? (sd[0] = N, mk_tensor("rscg", QNN_TENSOR_TYPE_STATIC, F16, 1, sd)) : rt_shared;
      if (getenv("P11_SCALE2D")) set_buf(&st, rsc, 2 * N);
      Qnn_Tensor_t gsc1 = mk_tensor("gsc1", QNN_TENSOR_TYPE_NATIVE, F16, 1, gs1);
      Qnn_Tensor_t gsc = mk_tensor("gsc", QNN_TENSOR_TYPE_NATIVE, F16, 2, gsd);
      CK(Q->tensorCreateGraphTensor(g, &r8)); CK(Q->tensorCreateGraphTensor(g, &rh)); if (getenv("P11_SCALE2D")) CK(Q->tensorCreateGraphTensor(g, &st));
      CK(Q->tensorCreateGraphTensor(g, &gsc1)); CK(Q->tensorCreateGraphTensor(g, &gsc));
      Qnn_Tensor_t in[2] = {Wt, id}; CK(Q->graphAddNode(g, mk_op("gather", "Gather", &ax, 1, in, 2, &r8, 1)));
      CK(Q->graphAddNode(g, mk_op("dq", "Dequantize", NULL, 0, &r8, 1, &rh, 1)));
      if (getenv("P11_NOGS")) { Qnn_Tensor_t in3[2] = {rh, rh}; CK(Q->graphAddNode(g, mk_op("mul", "ElementWiseMultiply", NULL, 0, in3, 2, &rows, 1))); goto done; }
      Qnn_Tensor_t in2[2] = {st, id}; CK(Q->graphAddNode(g, mk_op("gathers", "Gather", &ax, 1, in2, 2, &gsc1, 1)));
      CK(Q->graphAddNode(g, mk_op("rs", "Reshape", NULL, 0, &gsc1, 1, &gsc, 1)));
      Qnn_Tensor_t in3[2] = {rh, gsc}; CK(Q->graphAddNode(g, mk_op("mul", "ElementWiseMultiply", NULL, 0, in3, 2, &rows, 1)));
    } else if (!strcmp(MODE, "f16tab")) {
      uint16_t* Th = malloc(2 * (size_t)N * K); for (long i = 0; i < (long)N * K; i++) Th[i] = f2h(W[i] * sc[i / K]);
      uint32_t td[2] = {N, K}; Qnn_Tensor_t tt = mk_tensor("T16", QNN_TENSOR_TYPE_STATIC, F16, 2, td); set_buf(&tt, Th, 2 * N * K);
      CK(Q->tensorCreateGraphTensor(g, &tt));
      Qnn_Tensor_t in[2] = {tt, id}; CK(Q->graphAddNode(g, mk_op("gather", "Gather", &ax, 1, in, 2, &rows, 1)));
    } else if (!strcmp(MODE, "onehot")) {
      /* the one-hot matrix is an fp16 graph input [T, N] (built on the host here) */
      uint32_t od[2] = {T, N}; Qnn_Tensor_t oh = mk_tensor("onehot", QNN_TENSOR_TYPE_APP_WRITE, F16, 2, od);
      CK(Q->tensorCreateGraphTensor(g, &oh)); gin[ngin - 1] = oh;
      Qnn_Param_t p[2] = {scalar_param_bool("transpose_in0", 0), scalar_param_bool("transpose_in1", 0)};
      Qnn_Tensor_t in[2] = {oh, Wt}; CK(Q->graphAddNode(g, mk_op("mm", "MatMul", p, 2, in, 2, &rows, 1)));
    } else { fprintf(stderr, "mode?\n"); return 2; }
  }
done:;
  double t0 = now_ms(); CK(Q->graphFinalize(g, NULL, NULL)); double tf = now_ms() - t0;
  Qnn_ContextBinarySize_t bsz = 0; CK(Q->contextGetBinarySize(ctx, &bsz));
  void* buf = malloc(bsz); Qnn_ContextBinarySize_t wr = 0; CK(Q->contextGetBinary(ctx, buf, bsz, &wr));
  /* execute */
  uint16_t* xh = malloc(2 * K); float* xf = malloc(4 * K); for (int k = 0; k < K; k++) { xh[k] = f2h(frand(&s)); xf[k] = h2f(xh[k]); }
  uint16_t* lh = calloc(N, 2); uint16_t* rh = calloc((size_t)T * K, 2); uint16_t* ohb = NULL;
  for (int i = 0; i < ngin; i++) {
    if (gin[i].v2.name == x.v2.name) set_buf(&gin[i], xh, 2 * K);
    else if (!strcmp(gin[i].v2.name, "ids")) set_buf(&gin[i], ids, 4 * T);
    else { ohb = calloc((size_t)T * N, 2); for (int t = 0; t < T; t++) ohb[(size_t)t * N + ids[t]] = f2h(1.0f); set_buf(&gin[i], ohb, 2 * T * N); }
  }
  for (int i = 0; i < ngout; i++) set_buf(&gout[i], gout[i].v2.name == lo.v2.name ? (void*)lh : (void*)rh, gout[i].v2.name == lo.v2.name ? 2 * N : 2 * T * K);
  t0 = now_ms(); CK(Q->graphExecute(g, gin, ngin, gout, ngout, NULL, NULL)); double te = now_ms() - t0;
  double le = 0, lmax = 0, re = 0, rmax = 0;
  if (has_fc) for (int n = 0; n < N; n++) { double r = 0; for (int k = 0; k < K; k++) r += (double)xf[k] * W[(size_t)n * K + k] * sc[n];
    double d = fabs(h2f(lh[n]) - r); if (d > le) le = d; if (fabs(r) > lmax) lmax = fabs(r); }
  if (has_g) for (int t = 0; t < T; t++) for (int k = 0; k < K; k++) { double r = (double)W[(size_t)ids[t] * K + k] * sc[ids[t]];
    double d = fabs(h2f(rh[(size_t)t * K + k]) - r); if (d > re) re = d; if (fabs(r) > rmax) rmax = fabs(r); }
  printf("RESULT N=%d K=%d mode=%s ws=%d T=%d: binary %llu  N*K %ld  ratio %.3f  finalize %.0f ms  execute %.0f ms", N, K, MODE, ws, T,
         (unsigned long long)wr, (long)N * K, (double)wr / ((double)N * K), tf, te);
  if (has_fc) printf("  logits max err %.4g (ref max %.3g)", le, lmax);
  if (has_g) printf("  rows max err %.4g (ref max %.3g) row0[0..2] %.4f %.4f want %.4f %.4f", re, rmax, h2f(rh[0]), h2f(rh[1]),
                    W[(size_t)ids[0] * K] * sc[ids[0]], W[(size_t)ids[0] * K + 1] * sc[ids[0]]);
  printf("\n");
  return 0;
}
