/* The compile's summary (what was lowered, what stays on the CPU and why,
 * files, weights, time per stage) and --keep-intermediate's subgraph list. */
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "compiler/compile_internal.h"
#include "compiler/package_dir.h"
#include "compiler/requant.h"

void npl_compile_summary(FILE *o, const npl_compile_report *r) {
    const npl_compile_params *p = r->p;
    char path[NPL_PKG_PATH_MAX + 64];
    int lowered = 0;
    for (int si = 0; si < r->part->n_segs; si++)
        if (r->part->segs[si].keep) lowered += r->part->segs[si].n_nodes;
    fprintf(o, "npullm compile: %s -> %s\n", r->model_path, r->out_dir);
    fprintf(o, "  model      %s, %d layers, n_ctx %d, chunk %d, activations %s, weights %s%s\n", r->hp->arch_name,
            r->hp->n_layer, r->n_ctx, p->chunk, npl_act_prec_name(p->act), npl_weight_prec_name(p->weights),
            r->weights_auto ? " (keep would leave every GGML-quantized matmul on the CPU: the target takes no "
                              "GGML blocks)" : "");
    fprintf(o, "  target     %s\n", p->target);
    if (p->soc) fprintf(o, "  soc        %s\n", p->soc);
    fprintf(o, "  buckets    ");
    if (!r->n_buckets) fprintf(o, "none: every graph reads all %d cache rows\n", r->n_ctx);
    for (int b = 0; b < r->n_buckets; b++) fprintf(o, "%s%d", b ? ", " : "graphs over the first ", r->buckets[b]);
    if (r->n_buckets)
        fprintf(o, ", %d cache rows (AR-1; AR-%d from %d): each step runs the smallest that holds its positions\n",
                r->n_ctx, p->chunk, p->chunk);
    if (r->f32_classes) fprintf(o, "  keep-f32   %s: these tensor classes stay f32\n", p->keep_f32);
    if (r->calib) fprintf(o, "  samples    %lld tokens of %s (cycled)\n", (long long)r->n_calib, p->calib);
    if (r->int16_static)
        fprintf(o, "  int16      static uint16 scale/offset per tensor, ranges from the CPU path over %d tokens of %s; "
                   "int16 matmuls (w8/w4 weights), fp16 islands elsewhere (norms, RoPE, attention, GLU; residual f32)\n",
                r->n_range_tok, r->calib ? p->calib : r->n_calib ? "the built-in calibration text" : "built-in token ids");
    if (r->resid_scale != 1.0f && r->n_kept)
        fprintf(o, "  residual   held at %g x its value: the target computes f32 tensors in f16 arithmetic, whose "
                   "largest is 65504 (Gemma's BOS row reaches 1e5)\n", (double)r->resid_scale);
    if (p->weights == NPL_WEIGHTS_W8 || p->weights == NPL_WEIGHTS_W4)
        npl_requant_summary(o, r->mg->g, r->wc, r->n_nodes, npl_weight_prec_name(p->weights));
    if (p->weights == NPL_WEIGHTS_W4 && !r->int16_static)
        fprintf(o, "  w4         one 4-bit scale per output channel, not blockwise: QNN's blockwise expansion (LPBQ) "
                   "takes integer activations only (--act int16), and fp16 activations x LPBQ weights fail in QNN\n");
    fprintf(o, "  subgraphs  %d found, %d lowered\n", r->part->n_segs, r->n_kept);
    for (int si = 0; si < r->part->n_segs; si++) {
        const npl_segment *sg = &r->part->segs[si];
        char layer[32] = "";
        if (sg->layer == INT_MAX) snprintf(layer, sizeof layer, " output head,");
        else if (sg->layer >= 0) snprintf(layer, sizeof layer, " layer %d,", sg->layer);
        fprintf(o, "    #%d:%s %d ops (%d matmul), %d inputs, %d outputs: %s%s\n", si, layer, sg->n_nodes, sg->n_matmul,
                sg->n_inputs, sg->n_outputs, sg->keep ? "accelerator" : "CPU: ", sg->keep ? "" : sg->why);
        npl_compile_lpbq_summary(o, &r->res[si]);
        if (!sg->keep) continue;
        fprintf(o, "       accel_%d.bin: %.2f MiB, weights %.2f MiB, %d graphs:", si, r->res[si].bin_size / 1048576.0,
                r->res[si].static_bytes / 1048576.0, r->res[si].n_shapes);
        fprintf(o, "\n       finalize:");
        for (int c = 0; c < r->res[si].n_shapes; c++) fprintf(o, " %s %.2fs", r->res[si].names[c], r->res[si].finalize_s[c]);
        fprintf(o, "\n       check:");
        for (int c = 0; c < r->res[si].n_shapes; c++)
            if (p->check)
                fprintf(o, " %s (max abs err %.3g, rel rms %.3g)", r->res[si].names[c], r->res[si].max_err[c],
                        r->res[si].rel_err[c]);
            else
                fprintf(o, " %s (not checked)", r->res[si].names[c]);
        fprintf(o, "\n");
    }
    fprintf(o, "  ops        %d lowered, %d on the CPU\n", lowered, r->part->n_cpu_ops);
    for (int i = 0; i < r->part->n_cpu_ops; i++)
        fprintf(o, "    CPU: node %d %s: %s\n", r->part->cpu_ops[i], npl_op_name(npl_graph_node(r->mg->g, r->part->cpu_ops[i])->op),
                r->part->cpu_why[i]);
    snprintf(path, sizeof path, "%s/model.gguf", r->out);
    struct stat gs;
    fprintf(o, "  files      model.gguf %.2f MiB, context binaries %.2f MiB\n",
            stat(path, &gs) == 0 ? gs.st_size / 1048576.0 : 0.0, r->total_bin / 1048576.0);
    uint64_t wbytes = 0;
    for (int si = 0; si < r->part->n_segs; si++)
        if (r->part->segs[si].keep) wbytes += r->res[si].static_bytes;
    int n_graphs = 0;
    for (int si = 0; si < r->part->n_segs; si++)
        if (r->part->segs[si].keep) n_graphs += r->res[si].n_shapes;
    /* what is not weights is QNN's per-graph data, which grows with the graphs'
     * rows; a FullyConnected's weights are stored unpadded (docs/qnn-lpbq-shapes.md:
     * SmolLM2 weight-shared at chunk 128 was 1.161x with the [S, H, D/2, 2]
     * interleaved Rope, 1.059x without) */
    if (wbytes && p->weight_sharing && r->total_bin > wbytes)
        fprintf(o, "  binary     %.2f MiB beyond the weights over %d graphs (%.2f MiB per graph): graph data, which "
                "grows with the chunk's rows, not padding\n", (double)(r->total_bin - wbytes) / 1048576.0, n_graphs,
                (double)(r->total_bin - wbytes) / 1048576.0 / (n_graphs ? n_graphs : 1));
    if (wbytes)
        fprintf(o, "  weights    %.2f MiB at the chosen encoding%s; the context binaries are %.3fx that (%s)\n",
                wbytes / 1048576.0, p->weights == NPL_WEIGHTS_W4 ? " (w4 counted as its int8 containers; QNN packs them to 4 bits)" : "",
                (double)r->total_bin / (double)wbytes,
                p->weight_sharing ? "weight sharing: each weight once; for a device, QNN on x86 cannot load it"
                                 : "no weight sharing: each graph holds its own copy; loads in QNN's x86 emulator");
    for (int i = 0; i < r->n_shared; i++)
        fprintf(o, "  shared     %s (%.2f MiB): stored once, the CPU side reads it from %s at offset %llu\n",
                r->shared[i].name, r->shared_bytes[i] / 1048576.0, r->shared[i].file, (unsigned long long)r->shared[i].offset);
    /* the tied matrix with its lookup on the NPU: in the binary only, if its subgraph was kept */
    int tied_seg = -1;
    for (int si = 0; r->tied >= 0 && si < r->part->n_segs; si++) {
        int both = 0;
        for (int k = 0; r->part->segs[si].keep && k < r->part->segs[si].n_nodes; k++)
            both |= (r->part->segs[si].nodes[k] == r->tied_lookup) | (r->part->segs[si].nodes[k] == r->tied_matmul) << 1;
        if (both == 3) tied_seg = si;
    }
    if (r->tied >= 0 && tied_seg >= 0) {
        const npl_node *w = npl_graph_node(r->mg->g, r->tied);
        fprintf(o, "  once       %s (%lld x %lld, %.2f MiB int8): in accel_%d.bin only, one int8 table with a scale per "
                "row that the NPU's row lookup (Gather) and output matmul both read; model.gguf does not hold it\n",
                w->name, (long long)w->shape.ne[1], (long long)w->shape.ne[0],
                (double)w->shape.ne[0] * (double)w->shape.ne[1] / 1048576.0, tied_seg);
    }
    for (int i = 0; i < r->n_unshared && i < MAX_SHARED; i++) {
        if (r->tied_why)
            fprintf(o, "  twice      %s: the CPU side and the accelerator both hold it (QNN HTP stores a per-channel "
                    "int8 matrix in a layout with no readable rows, so the CPU's lookup keeps the GGUF's; the NPU's "
                    "lookup would store it once, but %s)\n", r->unshared[i], r->tied_why);
        else
            fprintf(o, "  twice      %s: the CPU side and the accelerator both hold it (the target stores it "
                    "converted)\n", r->unshared[i]);
    }
    static const char *const sn[6] = {"graph", "partition", "lower", "check", "replace", "write"};
    fprintf(o, "  time      ");
    for (int i = 0; i < 6; i++) fprintf(o, " %s %.2fs", sn[i], r->stage_t[i]);
    fprintf(o, "; total %.2fs\n", npl_compile_now() - r->t_start);
}

void npl_compile_write_intermediate(const char *dir, const npl_partition *part, const seg_result *res,
                                    const npl_graph *g, int check) {
    char path[NPL_PKG_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/intermediate", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/intermediate/npu_postreat.json", dir);
    FILE *jf = fopen(path, "w");
    if (jf) {
        fprintf(jf, "{\n  \"subgraphs\": [\n");
        for (int si = 0; si < part->n_segs; si++) {
            const npl_segment *sg = &part->segs[si];
            fprintf(jf, "    {\"index\": %d, \"ops\": %d, \"matmuls\": %d, \"first_node\": %d, \"last_node\": %d, "
                    "\"inputs\": %d, \"outputs\": %d, \"lowered\": %s, \"why\": \"%s\"",
                    si, sg->n_nodes, sg->n_matmul, sg->nodes[0], sg->nodes[sg->n_nodes - 1], sg->n_inputs,
                    sg->n_outputs, sg->keep ? "true" : "false", sg->keep ? "" : sg->why);
            if (sg->layer == INT_MAX) fprintf(jf, ", \"layer\": \"output head\"");
            else if (sg->layer >= 0) fprintf(jf, ", \"layer\": %d", sg->layer);
            if (sg->keep) {
                fprintf(jf, ", \"context_binary\": \"accel_%d.bin\", \"graphs\": [", si);
                for (int c = 0; c < res[si].n_shapes; c++) fprintf(jf, "%s\"%s\"", c ? ", " : "", res[si].names[c]);
                fprintf(jf, "]");
                /* the check against the CPU samples: with --split-layers each layer's own error */
                if (check) {
                    fprintf(jf, ", \"check\": [");
                    for (int c = 0; c < res[si].n_shapes; c++)
                    {
                        fprintf(jf, "%s{\"graph\": \"%s\", \"max_abs\": %.6g, \"rel_rms\": %.6g", c ? ", " : "",
                                res[si].names[c], res[si].max_err[c], res[si].rel_err[c]);
                        /* per output row of a many-row graph: [rel_rms, max_abs, the CPU row's max |value|] */
                        const int nr = res[si].n_rows[c];
                        if (nr > 1) {
                            fprintf(jf, ", \"rows\": [");
                            for (int row = 0; row < nr && row < MAX_CHECK_ROWS; row++)
                                fprintf(jf, "%s[%.4g, %.4g, %.4g]", row ? ", " : "", res[si].row_rel[c][row],
                                        res[si].row_max[c][row], res[si].row_ref[c][row]);
                            fprintf(jf, "]");
                        }
                        fprintf(jf, "}");
                    }
                    fprintf(jf, "]");
                }
            }
            fprintf(jf, "}%s\n", si + 1 < part->n_segs ? "," : "");
        }
        fprintf(jf, "  ],\n  \"cpu_ops\": [\n");
        for (int i = 0; i < part->n_cpu_ops; i++)
            fprintf(jf, "    {\"node\": %d, \"op\": \"%s\", \"why\": \"%s\"}%s\n", part->cpu_ops[i],
                    npl_op_name(npl_graph_node(g, part->cpu_ops[i])->op), part->cpu_why[i],
                    i + 1 < part->n_cpu_ops ? "," : "");
        fprintf(jf, "  ]\n}\n");
        fclose(jf);
    }
}
