"""Shares of all samples by thread, and inclusive shares per function for one thread, from
`perf script` output.  Usage: python3 shares.py PERF_SCRIPT_TXT THREAD [N]
"""
import collections, re, sys
def read(path):
    samples, cur = [], None
    for line in open(path, errors='replace'):
        if not line.strip():
            if cur: samples.append(cur)
            cur = None; continue
        if not line.startswith((' ', '\t')):
            cur = (line.split()[0], []); continue
        parts = line.strip().split(None, 1)
        if cur is not None and len(parts) == 2:
            m = re.match(r'(.*?)(\+0x[0-9a-f]+)? \((.*)\)$', parts[1])
            if m: cur[1].append((m.group(1), m.group(3)))
            else: cur[1].append((parts[1], ''))
    if cur: samples.append(cur)
    return samples
s = read(sys.argv[1]); n = len(s)
th = collections.Counter(t for t, _ in s)
print('samples', n)
for t, k in th.most_common(10): print('%5.1f%% %s' % (100*k/n, t))
kern = collections.Counter(t for t, st in s if st and 'kernel' in st[0][1])
print('kernel leaf by thread:', {t: '%.1f%%' % (100*k/n) for t, k in kern.items()})
pat = sys.argv[2] if len(sys.argv) > 2 else None
inc = collections.Counter()
for t, st in s:
    if pat and t != pat: continue
    inc.update(set(f for f, _ in st))
for f, k in inc.most_common(int(sys.argv[3]) if len(sys.argv) > 3 else 60):
    print('%5.1f%% %s' % (100*k/n, f[:150]))
