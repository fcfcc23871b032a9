#!/usr/bin/env python3
"""Times commands alternately, to the millisecond: tests/bench/bench.sh gives wall times
at /usr/bin/time's 10 ms resolution, too coarse to tell a 3% change of a 0.25 s command.
Not a test. Each round runs every command once, in the order given, so all see the same
phases of the machine's drift; prints the median, min and max of each.

    python3 tests/bench/alternate.py RUNS LABEL=COMMAND [LABEL=COMMAND ...]

e.g. python3 tests/bench/alternate.py 15 "before=old/memsnap summary long.pickle" \\
         "after=build-bench/memsnap summary long.pickle"
"""
import statistics
import subprocess
import sys
import time


def main(argv):
    if len(argv) < 3 or not argv[1].isdigit() or any("=" not in a for a in argv[2:]):
        sys.exit(__doc__)
    runs = int(argv[1])
    cmds = [a.split("=", 1) for a in argv[2:]]
    ms = {label: [] for label, _ in cmds}
    for _ in range(runs):
        for label, cmd in cmds:
            t = time.perf_counter()
            subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True)
            ms[label].append((time.perf_counter() - t) * 1000)
    for label, _ in cmds:
        v = sorted(ms[label])
        print(f"{label:14s} median {statistics.median(v):8.1f} ms  min {v[0]:8.1f}  max {v[-1]:8.1f}")


if __name__ == "__main__":
    main(sys.argv)
