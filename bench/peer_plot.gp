# peer_plot.gp - chart for bench/peer: prefill t/s vs prompt length (left),
# decode t/s per test (right); medians with min-max bars.
#   gnuplot -e "dir='bench/out'; out='bench/out/peer.png'; ttl='model'; pkg=0" bench/peer_plot.gp
# Reads dir/prefill.dat (n, then median/min/max for llama.cpp, npullm, package)
# and dir/decode.dat (quoted test name, then the same nine columns).
if (!exists("dir")) dir = 'bench/out'
if (!exists("out")) out = dir.'/peer.png'
if (!exists("ttl")) ttl = ''
if (!exists("pkg")) pkg = 0

set terminal pngcairo noenhanced size 1400,560 font 'sans,10'
set output out
set multiplot layout 1,2 title 'npullm vs llama.cpp: '.ttl.' (median, bars = min-max)'
set key top right
set grid ytics lc rgb '#dddddd'

set title 'Prefill'
set xlabel 'prompt tokens'
set ylabel 'tokens / s'
set logscale x 2
set yrange [0:*]
set xtics (64, 128, 256, 512, 1024, 2048, 4096, 8192)
set offsets graph 0.04, graph 0.04, 0, 0
f = dir.'/prefill.dat'
if (pkg) {
  plot f u 1:2:3:4 w yerrorlines lw 2 pt 7 lc rgb '#1f77b4' t 'llama.cpp', \
       f u 1:5:6:7 w yerrorlines lw 2 pt 5 lc rgb '#d62728' t 'npullm CPU', \
       f u 1:8:9:10 w yerrorlines lw 2 pt 9 lc rgb '#2ca02c' t 'npullm package'
} else {
  plot f u 1:2:3:4 w yerrorlines lw 2 pt 7 lc rgb '#1f77b4' t 'llama.cpp', \
       f u 1:5:6:7 w yerrorlines lw 2 pt 5 lc rgb '#d62728' t 'npullm CPU'
}

unset logscale x
set offsets 0, 0, 0, 0
set xtics auto
set title 'Decode (tgN = N tokens from empty context; @dK = after K tokens)'
set xlabel ''
set style data histogram
set style histogram errorbars gap 1 lw 1
set style fill solid 0.75 border -1
set boxwidth 0.9
set xtics nomirror rotate by -20
g = dir.'/decode.dat'
if (pkg) {
  plot g u 2:3:4:xtic(1) lc rgb '#1f77b4' t 'llama.cpp', \
       g u 5:6:7 lc rgb '#d62728' t 'npullm CPU', \
       g u 8:9:10 lc rgb '#2ca02c' t 'npullm package'
} else {
  plot g u 2:3:4:xtic(1) lc rgb '#1f77b4' t 'llama.cpp', \
       g u 5:6:7 lc rgb '#d62728' t 'npullm CPU'
}
unset multiplot
