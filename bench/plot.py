#!/usr/bin/python3
"""Plots lookup rate (packets/s) against rule count for drsim and its peers, from Google Benchmark JSON.

    bazel run --config=opt //bench:nic_bench -- --benchmark_out=/tmp/nic.json \
        --benchmark_filter='NicLookup|RteHashLookupBulk/'   # rte_hash's benches are linked into nic_bench
    bazel run --config=opt //bench:acl_bench -- --benchmark_out=/tmp/acl.json
    bash bench/ovs/build_ovs.sh && bazel run --config=opt //bench:ovs_classifier_bench -- \
        --benchmark_out=/tmp/ovs.json   # optional: OVS's classifier on the same ACL sets
    bench/plot.py bench/lookup_rates.png /tmp/nic.json /tmp/acl.json /tmp/ovs.json

Each series is one benchmark family (the name before the '/'); its x is the argument (rules or filters)
and its y the items_per_second of each run, the median when the file holds repetitions.
"""
import collections
import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# The families that are lookups, and how the legend names them.
SERIES = {
    "BM_NicLookup": "drsim: NIC, one 5-tuple matcher",
    "BM_NicLookupJumps": "drsim: NIC, 3 tables of jumps + 5-tuple",
    "BM_RteHashLookupBulk": "rte_hash: bulk lookup (32)",
    "BM_DrAclLookup": "drsim: NIC, ClassBench-style ACL",
    "BM_RteAclClassify": "rte_acl: classify (32), same ACL",
    "BM_OvsClsLookup": "OVS classifier: lookup as ovs-vswitchd does, same ACL",
    "BM_OvsClsLookupNoWc": "OVS classifier: lookup without wildcards, same ACL",
}


def load(paths):
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    for path in paths:
        with open(path) as f:
            for b in json.load(f)["benchmarks"]:
                if b.get("run_type") == "aggregate" or "items_per_second" not in b:
                    continue
                family, _, arg = b["run_name"].partition("/")
                if family in SERIES and arg.isdigit():
                    runs[family][int(arg)].append(b["items_per_second"])
    return runs


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: plot.py OUT.png BENCH.json [BENCH.json ...]")
    runs = load(argv[2:])
    if not runs:
        sys.exit("plot.py: no lookup benchmarks (%s) in %s" % (", ".join(SERIES), " ".join(argv[2:])))
    fig, ax = plt.subplots(figsize=(8, 6.5))
    for family, label in SERIES.items():
        if family not in runs:
            continue
        xs = sorted(runs[family])
        ys = [statistics.median(runs[family][x]) / 1e6 for x in xs]
        ax.plot(xs, ys, marker="o", label=label, linestyle="-" if label.startswith("drsim") else "--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rules (filters for the ACL series)")
    ax.set_ylabel("million packets / lookups per second")
    ax.set_title("Lookup rate against rule count, one core")
    ax.grid(True, which="both", alpha=0.3)
    # Below the axes: the lines cross every corner of the plot.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, fontsize="small")
    fig.tight_layout()
    fig.savefig(argv[1], dpi=110)
    print("wrote %s" % argv[1])


if __name__ == "__main__":
    main(sys.argv)
