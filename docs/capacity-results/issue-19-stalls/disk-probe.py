import os, time, sys
# The disk alone, paced like the writer at 1,000 commits a second: every millisecond an 8 KiB
# write to a file that wraps at 4 MiB, then fsync (or fdatasync). Prints the latency spread.
dur=float(sys.argv[1]); path=sys.argv[2]; call=os.fdatasync if sys.argv[3]=='fdatasync' else os.fsync
fd=os.open(path,os.O_WRONLY|os.O_CREAT,0o644)
buf=os.urandom(8192); off=0; ts=[]; start=time.perf_counter(); i=0
while time.perf_counter()-start<dur:
    i+=1; nxt=start+i/1000.0
    os.pwrite(fd,buf,off); off=(off+8192)%(4<<20)
    t=time.perf_counter(); call(fd); ts.append((time.perf_counter()-t)*1000)
    d=nxt-time.perf_counter()
    if d>0: time.sleep(d)
ts.sort(); n=len(ts)
print('%s n=%d p50 %.2f p99 %.2f p99.9 %.2f max %.1f ms; >10ms %d, >25ms %d, >50ms %d'%(sys.argv[3],n,ts[n//2],ts[int(n*.99)],ts[int(n*.999)],ts[-1],sum(x>10 for x in ts),sum(x>25 for x in ts),sum(x>50 for x in ts)))
os.unlink(path)
