"""Inclusive share of all samples per function, for one thread, from `perf script` output.

Usage: python3 fold.py PERF_SCRIPT_TXT THREAD [REGEX]
"""
import collections
import re
import sys


def read_samples(path):
    """(thread name, [frames, leaf first]) for each sample of `perf script` output."""
    samples, cur = [], None
    for line in open(path):
        if not line.strip():
            if cur:
                samples.append(cur)
            cur = None
            continue
        if not line.startswith((' ', '\t')):
            cur = (line.split()[0], [])
            continue
        parts = line.strip().split(None, 1)
        if cur and len(parts) == 2:
            sym = re.sub(r'\+0x[0-9a-f]+.*', '', parts[1])
            cur[1].append(re.sub(r' \(.*\)$', '', sym))
    if cur:
        samples.append(cur)
    return samples


def main():
    samples = read_samples(sys.argv[1])
    comm, pat = sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else None)
    inclusive, n = collections.Counter(), 0
    for thread, stack in samples:
        if thread == comm:
            n += 1
            inclusive.update(set(stack))
    print('total', len(samples), comm, n, '%.1f%%' % (100 * n / len(samples)))
    for sym, k in inclusive.most_common(400):
        if not pat or re.search(pat, sym):
            print('%5.1f%% %s' % (100 * k / len(samples), sym[:160]))


if __name__ == '__main__':
    main()
