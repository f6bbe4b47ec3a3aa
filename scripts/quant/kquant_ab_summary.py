"""Medians (and ranges) of scripts/quant/kquant_ab.sh's lines, as a Markdown table; the
ratios are taken within each line (runs back to back), then their median.

  python3 scripts/quant/kquant_ab_summary.py results.txt
"""
import statistics
import sys
from collections import defaultdict


def spread(xs):
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}–{max(xs):.2f})"


def main(path):
    by_type = defaultdict(list)
    for line in open(path, encoding="utf-8"):
        f = line.split()
        if len(f) == 9:  # round type q4_0(1,5) new(1,5) old(1,5) load
            by_type[f[1]].append([float(x) for x in f[2:9]])
    print("| type | before | after | after / before | after / q4_0 | before / q4_0 |"
          " 5 rows: before | after | after / q4_0 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for t, rows in by_type.items():
        col = lambda i: [r[i] for r in rows]  # noqa: E731
        ratio = lambda a, b: [r[a] / r[b] for r in rows]  # noqa: E731
        print(f"| {t} | {spread(col(4))} | {spread(col(2))} | {spread(ratio(2, 4))} | {spread(ratio(2, 0))} |"
              f" {spread(ratio(4, 0))} | {spread(col(5))} | {spread(col(3))} | {spread(ratio(3, 1))} |")
    loads = [r[6] for rows in by_type.values() for r in rows]
    print(f"\nrounds {max(len(r) for r in by_type.values())}, load average {min(loads)}–{max(loads)}")


if __name__ == "__main__":
    main(sys.argv[1])
