import sys, re, collections
# inclusive % of the frames called directly (nearest porch:: or named) beneath a target frame
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
N=len(samples); target=sys.argv[2]; depth=int(sys.argv[3]) if len(sys.argv)>3 else 1
c=collections.Counter(); tot=0
for comm,st in samples:
    # st is leaf-first
    idx=[i for i,s in enumerate(st) if re.search(target,s)]
    if not idx: continue
    tot+=1
    i=max(idx)  # outermost occurrence
    below=st[max(0,i-depth):i][::-1]
    c[' > '.join(x[:70] for x in below) or '(self)']+=1
print('target %.1f%% of %d'%(100*tot/N,N))
for k,v in c.most_common(30): print('%5.1f%% %s'%(100*v/N,k))
