"""Share of all samples by the frames called beneath a target frame, `depth` levels deep.

Usage: python3 children.py PERF_SCRIPT_TXT TARGET_REGEX [DEPTH]
"""
import collections
import re
import sys

from fold import read_samples


def main():
    samples = read_samples(sys.argv[1])
    target, depth = sys.argv[2], (int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    below, hits = collections.Counter(), 0
    for _, stack in samples:
        found = [i for i, sym in enumerate(stack) if re.search(target, sym)]
        if not found:
            continue
        hits += 1
        outer = max(found)
        path = stack[max(0, outer - depth):outer][::-1]
        below[' > '.join(s[:70] for s in path) or '(self)'] += 1
    print('target %.1f%% of %d' % (100 * hits / len(samples), len(samples)))
    for path, k in below.most_common(30):
        print('%5.1f%% %s' % (100 * k / len(samples), path))


if __name__ == '__main__':
    main()
