"""Summarises Nsight Compute's raw CSV (scripts/device/run-all.sh check) of a
`hark bench` run: every kernel launch in order with its duration and DRAM traffic, then
totals per kernel kind. Usage: python3 scripts/device/kernel_table.py ncu.csv [--from N --to M]"""
import argparse
import csv
import re
import sys
from collections import defaultdict


def short(name):
    name = re.sub(r"\(.*", "", name)
    name = re.sub(r"^void ", "", name)
    name = re.sub(r"hark::cuda::(\(anonymous namespace\)::)?", "", name)
    return name[:70]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--from", dest="first", type=int, default=0)
    ap.add_argument("--to", dest="last", type=int, default=10**9)
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    lines = [l for l in open(args.csv, encoding="utf-8", errors="replace") if l.startswith('"')]
    rows = list(csv.DictReader(lines))
    rows = [r for r in rows if r.get("ID", "").isdigit()]
    totals = defaultdict(lambda: [0, 0.0, 0.0])
    for r in rows:
        i = int(r["ID"])
        if i < args.first or i > args.last:
            continue
        num = lambda v: float((v or "0").replace(",", ""))
        ns = num(r["gpu__time_duration.sum"])
        rd = num(r["dram__bytes_read.sum"])
        wr = num(r["dram__bytes_write.sum"])
        key = (short(r["Kernel Name"]), r["Grid Size"], r["Block Size"])
        t = totals[key]
        t[0] += 1
        t[1] += ns
        t[2] += rd + wr
        if args.list:
            gbs = (rd + wr) / ns if ns else 0
            print(f"{i:5d} {ns/1000:9.2f} us {gbs:7.1f} GB/s  {key[0]} grid{key[1]} block{key[2]}")
    print(f"\n{'count':>6} {'total us':>10} {'mean us':>9} {'GB/s':>7}  kernel")
    for key, (n, ns, b) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        print(f"{n:6d} {ns/1000:10.1f} {ns/1000/n:9.2f} {b/ns if ns else 0:7.1f}  {key[0]} grid{key[1]} block{key[2]}")


if __name__ == "__main__":
    main()
