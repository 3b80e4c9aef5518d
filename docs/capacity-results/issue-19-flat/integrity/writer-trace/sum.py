import sys
for lab in sys.argv[1:]:
    rows=[list(map(int,l.split())) for l in open(f'/tmp/e6/{lab}/trace.txt') if l.strip() and not l.startswith('OP')]
    n=len(rows)
    ap=sum(r[2] for r in rows); co=sum(r[4] for r in rows); ck=sum(r[5] for r in rows); nck=sum(1 for r in rows if r[5]>0)
    slow=[r for r in rows if r[2]+r[4]>20000]
    big_op=[r for r in rows if r[3]>5000]
    cks=sorted(r[5] for r in rows if r[5]>0)
    med=lambda a: a[len(a)//2] if a else 0
    print(f"{lab}: batches {n} writes {sum(r[0] for r in rows)} apply {ap/1e6:.2f}s commit {co/1e6:.2f}s (ckpt {ck/1e6:.2f}s in {nck}, med {med(cks)/1000:.1f}ms max {max(cks or [0])/1000:.1f}ms) slow>20ms {len(slow)} ops>5ms {len(big_op)} maxop {max(r[3] for r in rows)/1000:.1f}ms")
    commit_nock=sorted(r[4]-r[5] for r in rows)
    print("   commit-without-ckpt p50/p99/max ms", commit_nock[n//2]/1000, commit_nock[int(n*.99)]/1000, commit_nock[-1]/1000)
