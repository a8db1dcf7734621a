"""The suite's table from results.jsonl (bench/harnesses/run.sh): per
harness and engine, the median executions per second, lines and branches
of the judge, and the runs that found a crash; then, per harness, dst's
ratio to each engine and a two-sided Mann-Whitney U test (exact, over all
orderings of the two samples) of dst's branches against the better other
engine's."""
import itertools
import json
import statistics
import sys


def mann_whitney_p(a, b):
    """Two-sided exact p-value of the U statistic (ties count one half)."""
    def u(x, y):
        return sum((1.0 if i > j else 0.5 if i == j else 0.0) for i in x for j in y)
    observed = abs(u(a, b) - len(a) * len(b) / 2)
    pooled = a + b
    count = extreme = 0
    for chosen in itertools.combinations(range(len(pooled)), len(a)):
        x = [pooled[i] for i in chosen]
        y = [pooled[i] for i in range(len(pooled)) if i not in chosen]
        count += 1
        if abs(u(x, y) - len(a) * len(b) / 2) >= observed - 1e-9:
            extreme += 1
    return extreme / count


def main(path):
    runs = [json.loads(line) for line in open(path) if line.strip()]
    by = {}
    for run in runs:
        by.setdefault((run['harness'], run['engine']), []).append(run)
    harnesses = sorted({r['harness'] for r in runs})
    print('| harness | engine | trials | exec/s (median) | lines | branches | crashes found |')
    print('|---|---|---|---|---|---|---|')
    for h in harnesses:
        for e in ('libfuzzer', 'afl', 'dst'):
            rs = by.get((h, e), [])
            if not rs:
                continue
            med = lambda k: statistics.median(r[k] for r in rs)
            print(f"| {h} | {e} | {len(rs)} | {med('exec_per_sec'):,.0f} | {med('lines'):,.0f} "
                  f"| {med('branches'):,.0f} | {sum(r['crash'] for r in rs)} |")
    print()
    print('| harness | dst exec/s vs libFuzzer | vs AFL++ | dst branches vs the better | p (Mann-Whitney) |')
    print('|---|---|---|---|---|')
    for h in harnesses:
        dst = by.get((h, 'dst'), [])
        others = {e: by.get((h, e), []) for e in ('libfuzzer', 'afl')}
        if not dst or not all(others.values()):
            continue
        rate = lambda rs: statistics.median(r['exec_per_sec'] for r in rs) or 1e-9
        branches = lambda rs: statistics.median(r['branches'] for r in rs)
        better = max(others, key=lambda e: branches(others[e]))
        p = mann_whitney_p([r['branches'] for r in dst], [r['branches'] for r in others[better]])
        print(f"| {h} | {rate(dst) / rate(others['libfuzzer']):.2f}x | {rate(dst) / rate(others['afl']):.2f}x "
              f"| {branches(dst):,.0f} vs {branches(others[better]):,.0f} ({better}) | {p:.3f} |")


if __name__ == '__main__':
    main(sys.argv[1])
