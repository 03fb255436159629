# bench/latency.gp - the per-call latency histograms of bench/run.py.
# gnuplot -e "dir='bench'; out='bench/latency.png'; lttng=1" bench/latency.gp
# Each hist-SIDE-MODE.dat holds "ns_low ns_high calls" in bins eight to an
# octave; plotted as the share of calls per bin, both axes logarithmic.
set terminal pngcairo size 1400,900 font "DejaVu Sans,11"
set output out
set multiplot layout 2,2 title "Per-call latency of one event: xtc-tail vs LTTng-UST (rdtsc around single calls, empty-timing overhead subtracted)"
set logscale x 2
set logscale y 10
set xrange [0.35:4194304]
set yrange [1e-7:1]
set format y "10^{%L}"
set xtics ("0" 0.45, "1" 1, "4" 4, "16" 16, "64" 64, "256" 256, "1 us" 1024, "4 us" 4096, "16 us" 16384, "64 us" 65536, "256 us" 262144, "1 ms" 1048576, "4 ms" 4194304)
set xlabel "ns per call"
set ylabel "share of calls"
set grid
set key top right
set style fill transparent solid 0.35 noborder
# The first bin (0 to 0.5 ns: faster than the TSC step) is drawn over 0.35-0.55 ns.
tot(f) = system(sprintf("awk '!/^#/{s+=$3} END{print s+0}' %s", f))
lo(x) = x < 0.5 ? 0.35 : x
do for [m in "draining flight full disabled"] {
	fx = sprintf("%s/hist-xtc-%s.dat", dir, m)
	fl = sprintf("%s/hist-lttng-%s.dat", dir, m)
	title_m = m eq "draining" ? "enabled, daemon draining" : m eq "flight" ? "enabled, flight recorder (no daemon)" : m eq "full" ? "enabled, ring full (drop path)" : "disabled"
	set title title_m
	nx = tot(fx) + 0
	if (lttng) {
		nl = tot(fl) + 0
		plot fx using (lo($1)):($3 > 0 ? $3/nx : NaN):(lo($1)):($2):(1e-9):($3/nx) with boxxyerror lc rgb "#1f77b4" title "xtc-tail", \
		     fl using (lo($1)):($3 > 0 ? $3/nl : NaN):(lo($1)):($2):(1e-9):($3/nl) with boxxyerror lc rgb "#d62728" title "LTTng-UST"
	} else {
		plot fx using (lo($1)):($3 > 0 ? $3/nx : NaN):(lo($1)):($2):(1e-9):($3/nx) with boxxyerror lc rgb "#1f77b4" title "xtc-tail"
	}
}
unset multiplot
