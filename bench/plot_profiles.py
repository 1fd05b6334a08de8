#!/usr/bin/python3
"""Plots drsim's ACL lookups against rte_acl's classify on ClassBench profiles, from Google Benchmark JSON.

One acl_bench run a profile, each writing its JSON (F: a set db_generator made from the profile's seed, with
F_trace from trace_generator):

    bazel run --config=opt //bench:acl_bench -- --filters=$F --trace=${F}_trace \
        --benchmark_enable_random_interleaving=true --benchmark_repetitions=3 \
        --benchmark_filter='(DrAclLookup|DrAclTupleLookup|RteAclClassify)/10000$' --benchmark_out=$F.json
    bench/plot_profiles.py bench/acl_profiles.png acl1=/tmp/acl1.json fw1=/tmp/fw1.json ...

For each profile it draws two bars, the whole NIC's rate and the bare tuples' rate as ratios of rte_acl's
(medians of the repetitions), with the targets as lines: 1.0 for the NIC, 1.5 for bare tuples.
"""
import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

FAMILIES = ("BM_DrAclLookup", "BM_DrAclTupleLookup", "BM_RteAclClassify")


def medians(path):
    """The median items_per_second of each family in the JSON file at `path`."""
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    rates = {family: [] for family in FAMILIES}
    for run in runs:
        if run.get("run_type") != "iteration" or "items_per_second" not in run:
            continue
        family = run["name"].split("/")[0]
        if family in rates:
            rates[family].append(run["items_per_second"])
    missing = [family for family, values in rates.items() if not values]
    if missing:
        sys.exit(f"{path}: no runs of {', '.join(missing)}")
    return {family: statistics.median(values) for family, values in rates.items()}


def main(argv):
    if len(argv) < 3 or any("=" not in arg for arg in argv[2:]):
        sys.exit("usage: plot_profiles.py OUT.png PROFILE=RUN.json...")
    profiles, nic, bare = [], [], []
    for arg in argv[2:]:
        name, path = arg.split("=", 1)
        m = medians(path)
        profiles.append(name)
        nic.append(m["BM_DrAclLookup"] / m["BM_RteAclClassify"])
        bare.append(m["BM_DrAclTupleLookup"] / m["BM_RteAclClassify"])
    x = range(len(profiles))
    fig, ax = plt.subplots(figsize=(10, 4.5))
    ax.bar([i - 0.2 for i in x], nic, width=0.4, label="drsim whole NIC / rte_acl classify")
    ax.bar([i + 0.2 for i in x], bare, width=0.4, label="drsim bare 5-tuples / rte_acl classify")
    ax.axhline(1.0, color="tab:blue", linestyle="--", linewidth=1, label="target, whole NIC (1.0)")
    ax.axhline(1.5, color="tab:orange", linestyle="--", linewidth=1, label="target, bare tuples (1.5)")
    ax.set_xticks(list(x))
    ax.set_xticklabels(profiles)
    ax.set_ylabel("lookup rate, ratio to rte_acl")
    ax.set_title("ClassBench profiles, about 10K filters each (medians of three, one process a profile)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(argv[1], dpi=100)


if __name__ == "__main__":
    main(sys.argv)
