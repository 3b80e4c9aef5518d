import sys, re, collections
# Reads perf script output; prints inclusive % (of all samples) per function for a thread name
samples=[]; cur=None
for line in open(sys.argv[1]):
    if not line.strip():
        if cur: samples.append(cur); cur=None
        continue
    if not line.startswith((' ','\t')):
        cur=(line.split()[0],[]); continue
    parts=line.strip().split(None,1)
    if cur and len(parts)==2:
        sym=re.sub(r'\+0x[0-9a-f]+.*','',parts[1]); sym=re.sub(r' \(.*\)$','',sym)
        cur[1].append(sym)
if cur: samples.append(cur)
N=len(samples)
comm=sys.argv[2]; pat=sys.argv[3] if len(sys.argv)>3 else None
inc=collections.Counter()
n=0
for c,st in samples:
    if c!=comm: continue
    n+=1
    for s in set(st): inc[s]+=1
print('total',N,comm,n,'%.1f%%'%(100*n/N))
for s,k in inc.most_common(400):
    if pat and not re.search(pat,s): continue
    print('%5.1f%% %s'%(100*k/N,s[:160]))
