"""Synthetic stand-ins for Baldur's HPC traces (§V-A: four Design Forward
DUMPI traces, which are not public in a form we can redistribute). Writes
open-loop `src,dst,bytes,start` CSVs for 1,024 nodes, one 512 B packet per
row (the paper's packet size):

- stencil2d.csv: a 32 x 32 torus halo exchange: in each of 10 phases every
  node sends one packet to each of its 4 neighbours at the phase start;
  phases 2 us apart (compute between exchanges). 40,960 packets.
- allreduce.csv: recursive-doubling all-reduce: in step s (0..9) node i sends
  4 packets (2 KB) to i xor 2^s; steps 1 us apart, so each step's exchange
  starts whether or not the last one finished (open loop: the real trace's
  dependencies are not modelled). 40,960 packets.

- fb3d.csv: a stand-in for FB, the one trace the paper names (§V-B:
  "in FB, the average (tail) latency of dragonfly/fat-tree is 23.5X/46.1X"):
  Design Forward's FillBoundary (BoxLib) fills the ghost cells of a 3-D
  domain decomposition from its 26 neighbours. Here 1,024 nodes form a
  16 x 8 x 8 periodic grid; in each of 3 phases every node sends 4 packets
  (2 KB) to each of its 6 face neighbours and 1 to each of its 12 edge and
  8 corner neighbours at the phase start; phases 20 us apart. 135,168
  packets. What differs from the trace: its message sizes, rank placement,
  phase timing and the dependencies between receives and sends are not
  known to us (open loop, assumed sizes).

Deterministic (no randomness): `python3 make_traces.py` rewrites every file.
"""

N = 32  # grid side: N * N = 1,024 nodes


def stencil():
    rows = []
    for ph in range(10):
        t = ph * 2000  # ns
        for y in range(N):
            for x in range(N):
                i = y * N + x
                for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                    j = ((y + dy) % N) * N + (x + dx) % N
                    rows.append((t, i, j))
    return rows


def allreduce():
    rows = []
    for s in range(10):
        t = s * 1000
        for i in range(N * N):
            for _ in range(4):
                rows.append((t, i, i ^ (1 << s)))
    return rows


def fb3d():
    X, Y, Z = 16, 8, 8
    rows = []
    for ph in range(3):
        t = ph * 20000  # ns
        for z in range(Z):
            for y in range(Y):
                for x in range(X):
                    i = (z * Y + y) * X + x
                    for dz in (-1, 0, 1):
                        for dy in (-1, 0, 1):
                            for dx in (-1, 0, 1):
                                k = abs(dx) + abs(dy) + abs(dz)
                                if k == 0:
                                    continue
                                j = (((z + dz) % Z) * Y + (y + dy) % Y) * X + (x + dx) % X
                                for _ in range(4 if k == 1 else 1):
                                    rows.append((t, i, j))
    return rows


for name, rows in (("stencil2d", stencil()), ("allreduce", allreduce()), ("fb3d", fb3d())):
    rows.sort(key=lambda r: r[0])
    with open(f"{name}.csv", "w") as f:
        f.write(f"# synthetic stand-in ({name}), see make_traces.py\n")
        f.write("src,dst,bytes,start\n")
        for t, i, j in rows:
            f.write(f"{i},{j},512,{t}ns\n")
