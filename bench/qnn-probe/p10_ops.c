/* Binary size of a chain of L ops on x[M,D] fp16 (SM8650 v75): OP add (x + b, b a graph input [M,D]) |
 * mul | rms (RmsNorm with gamma [D]) | softmax | addw (x + STATIC [D] broadcast) | fc (int8 pc DxD)
 * usage: p10_ops OP D L M */
#include "qnnu.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>
static uint32_t DT = 0x0216;
int main(int argc, char** argv) {
  if (getenv("F32")) DT = 0x0232;
  const char* OP = argv[1]; int D = atoi(argv[2]), L = atoi(argv[3]), M = atoi(argv[4]);
  if (qnnu_load(qnnu_path("libQnnHtp.so"))) return 1;
  Qnn_BackendHandle_t be; Qnn_DeviceHandle_t dev; Qnn_ContextHandle_t ctx; Qnn_GraphHandle_t g;
  if (qnnu_setup(57, 75, 1, &be, &dev)) return 1;
  if (qnnu_context(be, dev, 0, &ctx)) return 1;
  if (qnnu_graph(ctx, "ops", 0, &g)) return 1;
  uint32_t* xd = malloc(8); xd[0] = M; xd[1] = D; uint32_t* gd = malloc(4); gd[0] = D;
  Qnn_Tensor_t x = mk_tensor("x", QNN_TENSOR_TYPE_APP_WRITE, DT, 2, xd);
  Qnn_Tensor_t b = mk_tensor("b", QNN_TENSOR_TYPE_APP_WRITE, DT, 2, xd);
  CK(Q->tensorCreateGraphTensor(g, &x)); CK(Q->tensorCreateGraphTensor(g, &b));
  uint16_t* ones = malloc(2 * D); for (int i = 0; i < D; i++) ones[i] = f2h(1.0f + i * 1e-3f);
  char nm[64]; long sbytes = 0;
  for (int i = 0; i < L; i++) {
    snprintf(nm, sizeof nm, "y%d", i);
    Qnn_Tensor_t y = mk_tensor(strdup(nm), i == L - 1 ? QNN_TENSOR_TYPE_APP_READ : QNN_TENSOR_TYPE_NATIVE, DT, 2, xd);
    CK(Q->tensorCreateGraphTensor(g, &y));
    snprintf(nm, sizeof nm, "op%d", i); char* on = strdup(nm);
    if (!strcmp(OP, "add") || !strcmp(OP, "mul")) { Qnn_Tensor_t in[2] = {x, b}; CK(Q->graphAddNode(g, mk_op(on, !strcmp(OP, "add") ? "ElementWiseAdd" : "ElementWiseMultiply", NULL, 0, in, 2, &y, 1))); }
    else if (!strcmp(OP, "addw")) { snprintf(nm, sizeof nm, "w%d", i); Qnn_Tensor_t w = mk_tensor(strdup(nm), QNN_TENSOR_TYPE_STATIC, DT, 1, gd); set_buf(&w, ones, 2 * D); CK(Q->tensorCreateGraphTensor(g, &w)); sbytes += 2 * D;
      Qnn_Tensor_t in[2] = {x, w}; CK(Q->graphAddNode(g, mk_op(on, "ElementWiseAdd", NULL, 0, in, 2, &y, 1))); }
    else if (!strcmp(OP, "softmax")) { Qnn_Param_t p[2] = {scalar_param_u32("axis", 1), scalar_param_f32("beta", 1.0f)}; CK(Q->graphAddNode(g, mk_op(on, "Softmax", p, 2, &x, 1, &y, 1))); }
    else if (!strcmp(OP, "rms")) {
      snprintf(nm, sizeof nm, "g%d", i); Qnn_Tensor_t w = mk_tensor(strdup(nm), QNN_TENSOR_TYPE_STATIC, DT, 1, gd); set_buf(&w, ones, 2 * D); CK(Q->tensorCreateGraphTensor(g, &w)); sbytes += 2 * D;
      Qnn_Param_t rp[2]; rp[0] = scalar_param_f32("epsilon", 1e-6f);
      memset(&rp[1], 0, sizeof rp[1]); rp[1].paramType = QNN_PARAMTYPE_TENSOR; rp[1].name = "axes"; uint32_t* ad = malloc(4); ad[0] = 1; static uint32_t ax = 1;
      snprintf(nm, sizeof nm, "axes%d", i); rp[1].tensorParam = mk_tensor(strdup(nm), 4, QNN_DATATYPE_UINT_32, 1, ad); set_buf(&rp[1].tensorParam, &ax, 4); CK(Q->tensorCreateGraphTensor(g, &rp[1].tensorParam));
      Qnn_Tensor_t in[2] = {x, w}; CK(Q->graphAddNode(g, mk_op(on, "RmsNorm", rp, 2, in, 2, &y, 1))); }
    else if (!strcmp(OP, "tr")) { /* [M, H, 64] -> [H, M, 64] -> back: D = H * 64 */
      uint32_t* d3 = malloc(12); d3[0] = M; d3[1] = D / 64; d3[2] = 64; uint32_t* t3 = malloc(12); t3[0] = D / 64; t3[1] = M; t3[2] = 64;
      snprintf(nm, sizeof nm, "r%d", i); Qnn_Tensor_t r = mk_tensor(strdup(nm), QNN_TENSOR_TYPE_NATIVE, DT, 3, d3); CK(Q->tensorCreateGraphTensor(g, &r));
      snprintf(nm, sizeof nm, "t%d", i); Qnn_Tensor_t t = mk_tensor(strdup(nm), QNN_TENSOR_TYPE_NATIVE, DT, 3, t3); CK(Q->tensorCreateGraphTensor(g, &t));
      snprintf(nm, sizeof nm, "u%d", i); Qnn_Tensor_t u = mk_tensor(strdup(nm), QNN_TENSOR_TYPE_NATIVE, DT, 3, d3); CK(Q->tensorCreateGraphTensor(g, &u));
      static uint32_t perm[3] = {1, 0, 2}; Qnn_Param_t pp; memset(&pp, 0, sizeof pp); pp.paramType = QNN_PARAMTYPE_TENSOR; pp.name = "perm"; uint32_t* pd = malloc(4); pd[0] = 3;
      snprintf(nm, sizeof nm, "p%d", i); pp.tensorParam = mk_tensor(strdup(nm), 4, QNN_DATATYPE_UINT_32, 1, pd); set_buf(&pp.tensorParam, perm, 12); CK(Q->tensorCreateGraphTensor(g, &pp.tensorParam));
      Qnn_Param_t pq = pp; snprintf(nm, sizeof nm, "q%d", i); pq.tensorParam = mk_tensor(strdup(nm), 4, QNN_DATATYPE_UINT_32, 1, pd); set_buf(&pq.tensorParam, perm, 12); CK(Q->tensorCreateGraphTensor(g, &pq.tensorParam));
      snprintf(nm, sizeof nm, "a%d", i); CK(Q->graphAddNode(g, mk_op(strdup(nm), "Reshape", NULL, 0, &x, 1, &r, 1)));
      snprintf(nm, sizeof nm, "b%d", i); CK(Q->graphAddNode(g, mk_op(strdup(nm), "Transpose", &pp, 1, &r, 1, &t, 1)));
      snprintf(nm, sizeof nm, "c%d", i); CK(Q->graphAddNode(g, mk_op(strdup(nm), "Transpose", &pq, 1, &t, 1, &u, 1)));
      CK(Q->graphAddNode(g, mk_op(on, "Reshape", NULL, 0, &u, 1, &y, 1))); }
    else if (!strcmp(OP, "mm")) { /* x as [H, M, 64] . Kc[H, C, 64]^T -> [H, M, C] . Vc[H, C, 64] -> [H, M, 64]; C = 256 */
      int H = D / 64, C = 256; uint32_t* d3 = malloc(12); d3[0] = H; d3[1] = M; d3[2] = 64; uint32_t* s3 = malloc(12); s3[0] = H; s3[1] = M; s3[2] = C; uint32_t* k3 = malloc(12); k3[0] = H; k3[1] = C; k3[2] = 64;
      snprintf(nm, sizeof nm, "r%d", i); Qnn_Tensor_t r = mk_tensor(strdup(nm), QNN_TENSOR_TYPE_NATIVE, DT, 3, d3); CK(Q->tensorCreateGraphTensor(g, &r));
      snprintf(nm, sizeof nm, "k%d", i); Qnn_Tensor_t k = mk_tensor(strdup(nm), QNN_TENSOR_TYPE_APP_WRITE, DT, 3, k3); CK(Q->tensorCreateGraphTensor(g, &k));
      snprintf(nm, sizeof nm, "v%d", i); Qnn_Tensor_t v = mk_tensor(strdup(nm), QNN_TENSOR_TYPE_APP_WRITE, DT, 3, k3); CK(Q->tensorCreateGraphTensor(g, &v));
      snprintf(nm, sizeof nm, "s%d", i); Qnn_Tensor_t sc = mk_tensor(strdup(nm), QNN_TENSOR_TYPE_NATIVE, DT, 3, s3); CK(Q->tensorCreateGraphTensor(g, &sc));
      snprintf(nm, sizeof nm, "o%d", i); Qnn_Tensor_t ov = mk_tensor(strdup(nm), QNN_TENSOR_TYPE_NATIVE, DT, 3, d3); CK(Q->tensorCreateGraphTensor(g, &ov));
      Qnn_Param_t p1[2] = {scalar_param_bool("transpose_in0", 0), scalar_param_bool("transpose_in1", 1)}, p2[2] = {scalar_param_bool("transpose_in0", 0), scalar_param_bool("transpose_in1", 0)};
      snprintf(nm, sizeof nm, "a%d", i); CK(Q->graphAddNode(g, mk_op(strdup(nm), "Reshape", NULL, 0, &x, 1, &r, 1)));
      Qnn_Tensor_t i1[2] = {r, k}; snprintf(nm, sizeof nm, "b%d", i); CK(Q->graphAddNode(g, mk_op(strdup(nm), "MatMul", p1, 2, i1, 2, &sc, 1)));
      Qnn_Tensor_t i2[2] = {sc, v}; snprintf(nm, sizeof nm, "c%d", i); CK(Q->graphAddNode(g, mk_op(strdup(nm), "MatMul", p2, 2, i2, 2, &ov, 1)));
      CK(Q->graphAddNode(g, mk_op(on, "Reshape", NULL, 0, &ov, 1, &y, 1))); }
    else if (!strcmp(OP, "rope")) { /* halves of x by StridedSlice, times a graph input c[M, D/2], Concat */
      uint32_t* hd = malloc(8); hd[0] = M; hd[1] = D / 2;
      Qnn_Tensor_t hh[2], mm[2];
      snprintf(nm, sizeof nm, "c%d", i); Qnn_Tensor_t c = mk_tensor(strdup(nm), QNN_TENSOR_TYPE_APP_WRITE, DT, 2, hd); CK(Q->tensorCreateGraphTensor(g, &c));
      for (int h = 0; h < 2; h++) {
        snprintf(nm, sizeof nm, "h%d_%d", i, h); hh[h] = mk_tensor(strdup(nm), QNN_TENSOR_TYPE_NATIVE, DT, 2, hd); CK(Q->tensorCreateGraphTensor(g, &hh[h]));
        snprintf(nm, sizeof nm, "m%d_%d", i, h); mm[h] = mk_tensor(strdup(nm), QNN_TENSOR_TYPE_NATIVE, DT, 2, hd); CK(Q->tensorCreateGraphTensor(g, &mm[h]));
        int32_t* rg = malloc(24); rg[0] = 0; rg[1] = M; rg[2] = 1; rg[3] = h * D / 2; rg[4] = (h + 1) * D / 2; rg[5] = 1;
        Qnn_Param_t pr; memset(&pr, 0, sizeof pr); pr.paramType = QNN_PARAMTYPE_TENSOR; pr.name = "ranges"; uint32_t* rd = malloc(8); rd[0] = 2; rd[1] = 3;
        snprintf(nm, sizeof nm, "rg%d_%d", i, h); pr.tensorParam = mk_tensor(strdup(nm), 4, QNN_DATATYPE_INT_32, 2, rd); set_buf(&pr.tensorParam, rg, 24); CK(Q->tensorCreateGraphTensor(g, &pr.tensorParam));
        snprintf(nm, sizeof nm, "sl%d_%d", i, h); CK(Q->graphAddNode(g, mk_op(strdup(nm), "StridedSlice", &pr, 1, &x, 1, &hh[h], 1)));
        Qnn_Tensor_t in[2] = {hh[h], c}; snprintf(nm, sizeof nm, "mu%d_%d", i, h); CK(Q->graphAddNode(g, mk_op(strdup(nm), "ElementWiseMultiply", NULL, 0, in, 2, &mm[h], 1)));
      }
      Qnn_Param_t ax = scalar_param_u32("axis", 1);
      CK(Q->graphAddNode(g, mk_op(on, "Concat", &ax, 1, mm, 2, &y, 1))); }
    else { fprintf(stderr, "op?\n"); return 2; }
    x = y;
  }
  CK(Q->graphFinalize(g, NULL, NULL));
  Qnn_ContextBinarySize_t bsz = 0; CK(Q->contextGetBinarySize(ctx, &bsz));
  void* buf = malloc(bsz); Qnn_ContextBinarySize_t wr = 0; CK(Q->contextGetBinary(ctx, buf, bsz, &wr));
  printf("RESULT %s D=%d L=%d M=%d: binary %llu static %ld per op %.0f\n", OP, D, L, M, (unsigned long long)wr, sbytes, ((double)wr - sbytes) / L);
  return 0;
}
