# The generator figures of benches/run.sh as a chart: time per value (the median of the
# rounds), PostgreSQL 15 and 18 side by side, on a log scale (gen_random_uuid() is 50 times
# the cheapest). Called as: gnuplot -e "wide='generators.dat'; png='generators.png'" chart.gnuplot
# where generators.dat has a header line and "generator;ns_pg15;ns_pg18" rows.
set terminal pngcairo noenhanced size 1100,560 font "sans,10"
set output png
set datafile separator ";"
set title "Time per value, one session, median of the rounds (lower is better)"
set ylabel "ns per value"
set logscale y
set yrange [10:*]
set grid ytics
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by -25 scale 0 nomirror
set key top left
plot wide using 2:xtic(1) title columnheader(2) lc rgb "#336699", \
     ''   using 3 title columnheader(3) lc rgb "#cc6633"
