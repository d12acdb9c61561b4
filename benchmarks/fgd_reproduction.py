"""The FGD paper's experiment through ``batchsched simulate``: six GPU placement policies
on the Alibaba cluster-trace-gpu-v2023, GPU allocation against arrived load.

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent", USENIX ATC'23, Fig. 9(a): pods of
openb_pod_list_default.csv arrive (shuffled by seed, then drawn again at random)
on the 1,213 GPU nodes of openb_node_list_gpu_node.csv, none leaves. Each policy
runs with seeds 42..51 (the paper's), each run one process of

    batchsched simulate openb_pod_list_default.csv --cluster openb_node_list_gpu_node.csv \\
        --config <policy>.yaml --arrived-load 1.0 --arrival-order sampled --seed S \\
        --schedule-period 1e9 --output json

and the allocation ratio at 100% arrived load (``metrics.gpuAllocationRatio``) is
averaged over the seeds and set beside the paper's mean (fgd_expected_allocation.csv).

    python benchmarks/fgd_reproduction.py [--data DIR] [--seeds 42-51] [--workers 2]
        [--out benchmarks/fgd_results] [--plot docs/img/fgd-allocation.png]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

#: batchsched plugin -> the paper's name in fgd_expected_allocation.csv.
POLICIES = {
    "gpu-random": "01-Random",
    "gpu-dotprod": "02-DotProd",
    "gpu-clustering": "03-GpuClustering",
    "gpu-packing": "04-GpuPacking",
    "gpu-bestfit": "05-BestFit",
    "fgd": "06-FGD",
}
PUBLISHED_AT_100 = {"gpu-random": 86.30, "gpu-dotprod": 90.62, "gpu-clustering": 91.65,
                    "gpu-packing": 91.78, "gpu-bestfit": 92.86, "fgd": 95.23}
CONFIGURATION = """\
actions: "allocate"
nodesToFind: {{percentageOfNodesToFind: 100}}
tiers:
- plugins:
  - name: deviceshare
    arguments: {{deviceshare.GPUSharingEnable: true}}
  - name: {policy}
"""


def seeds_of(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def run_one(data: Path, config: Path, seed: int) -> dict[str, Any]:
    command = [sys.executable, "-m", "batchsched", "simulate",
               str(data / "openb_pod_list_default.csv"),
               "--cluster", str(data / "openb_node_list_gpu_node.csv"),
               "--config", str(config), "--arrived-load", "1.0", "--arrival-order", "sampled",
               "--seed", str(seed),
               "--schedule-period", "1e9", "--output", "json", "--no-progress"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - started
    result = json.loads(done.stdout)
    return {"seed": seed, "seconds": round(seconds, 2), "jobs": result["jobs"],
            "gpuAllocationRatio": result["metrics"]["gpuAllocationRatio"],
            "curve": result.get("gpuAllocationByArrivedLoad", [])}


def paper_curves(data: Path) -> dict[str, list[float]]:
    """The paper's mean allocation (%) at each arrived load 0..100, per policy."""
    with open(data / "fgd_expected_allocation.csv", encoding="utf-8") as file:
        rows = [row for row in csv.DictReader(file)
                if row["workload"] == "openb_pod_list_default"]
    curves = {}
    for policy, paper in POLICIES.items():
        mine = [row for row in rows if row["sc_policy"] == paper]
        curves[policy] = [statistics.mean(float(row[str(x)]) for row in mine)
                          for x in range(101)]
    return curves


def mean_curve(runs: list[dict[str, Any]]) -> list[list[float]]:
    by_load: dict[float, list[float]] = {}
    for run in runs:
        for load, ratio in run["curve"]:
            by_load.setdefault(load, []).append(ratio)
    return [[load, statistics.mean(values)] for load, values in sorted(by_load.items())
            if load <= 100]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/alibaba-gpu-2023"))
    parser.add_argument("--seeds", default="42-51")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/fgd_results"))
    parser.add_argument("--plot", type=Path, default=None)
    args = parser.parse_args()
    seeds = seeds_of(args.seeds)
    policies = [name for name in args.policies.split(",") if name]
    results: dict[str, list[dict[str, Any]]] = {policy: [] for policy in policies}
    with tempfile.TemporaryDirectory() as scratch:
        configs = {}
        for policy in policies:
            configs[policy] = Path(scratch) / f"{policy}.yaml"
            configs[policy].write_text(CONFIGURATION.format(policy=policy), encoding="utf-8")
        with ThreadPoolExecutor(args.workers) as pool:
            futures = {(policy, seed): pool.submit(run_one, args.data, configs[policy], seed)
                       for policy in policies for seed in seeds}
            for (policy, seed), future in futures.items():
                run = future.result()
                results[policy].append(run)
                print(f"{policy:15s} seed {seed}: {100 * run['gpuAllocationRatio']:.2f}% "
                      f"({run['seconds']:.1f} s)", flush=True)
    paper = paper_curves(args.data)
    table = []
    for policy in policies:
        ratios = [100 * run["gpuAllocationRatio"] for run in results[policy]]
        mean = statistics.mean(ratios)
        table.append({"policy": policy, "paper": PUBLISHED_AT_100[policy],
                      "batchsched": round(mean, 2),
                      "difference": round(mean - PUBLISHED_AT_100[policy], 2),
                      "min": round(min(ratios), 2), "max": round(max(ratios), 2),
                      "secondsPerRun": round(statistics.mean(
                          run["seconds"] for run in results[policy]), 1)})
    ranked_ours = [row["policy"] for row in sorted(table, key=lambda row: row["batchsched"])]
    ranked_paper = [row["policy"] for row in sorted(table, key=lambda row: row["paper"])]
    summary = {"seeds": seeds, "table": table, "sameRanking": ranked_ours == ranked_paper,
               "curves": {policy: mean_curve(results[policy]) for policy in policies},
               "runs": {policy: [{k: v for k, v in run.items() if k != "curve"}
                                 for run in results[policy]] for policy in policies}}
    args.out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n",
                                             encoding="utf-8")
    lines = ["| policy | paper (%) | batchsched (%) | difference | seeds min..max | s/run |",
             "|---|---|---|---|---|---|"]
    lines += [f"| `{row['policy']}` | {row['paper']:.2f} | {row['batchsched']:.2f} | "
              f"{row['difference']:+.2f} | {row['min']:.2f}..{row['max']:.2f} | "
              f"{row['secondsPerRun']:.1f} |" for row in table]
    lines.append(f"\nSame ranking as the paper: {'yes' if summary['sameRanking'] else 'no'} "
                 f"(seeds {seeds[0]}..{seeds[-1]}).")
    print("\n".join(lines))
    header = ("# The FGD paper's experiment (Fig. 9a) through `batchsched simulate`\n\n"
              "GPU allocation at 100% arrived load on the Alibaba cluster-trace-gpu-v2023 "
              "(openb_pod_list_default, 1,213 GPU nodes), mean over the seeds, beside the "
              "paper's mean.\n\n    python benchmarks/fgd_reproduction.py --data "
              "DIR/alibaba-gpu-2023 --plot docs/img/fgd-allocation.png\n\n")
    args.out.with_suffix(".md").write_text(header + "\n".join(lines) + "\n", encoding="utf-8")
    if args.plot is not None:
        plot(summary, paper, args.plot)
    return 0


def plot(summary: dict[str, Any], paper: dict[str, list[float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for index, (policy, curve) in enumerate(summary["curves"].items()):
        colour = f"C{index}"
        ax.plot([x for x, _ in curve], [y for _, y in curve], color=colour, label=policy)
        ax.plot(range(101), paper[policy], color=colour, linestyle=":", linewidth=1)
    ax.set_xlim(80, 100)
    ax.set_ylim(75, 100)
    ax.set_xlabel("arrived GPU load (% of the cluster's GPUs)")
    ax.set_ylabel("GPUs allocated (%)")
    ax.set_title("Alibaba GPU trace: batchsched (solid) and the FGD paper (dotted)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
