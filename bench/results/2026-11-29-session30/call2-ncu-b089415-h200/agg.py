import csv, statistics, sys, collections
rows = list(csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')))
h = rows[0]; ki = h.index("Kernel Name"); mi = h.index("Metric Name"); vi = h.index("Metric Value")
d = collections.defaultdict(list)
for r in rows[1:]:
    if r[mi] == "gpu__time_duration.sum":
        d[r[ki]].append(float(r[vi].replace(",", "")))
for k, v in sorted(d.items(), key=lambda kv: statistics.median(kv[1])):
    print(f"{len(v):5d} median {statistics.median(v):10.0f} min {min(v):10.0f}  {k[:200]}")
