# ruff: noqa: E501 - the Rust reference programs are data; their lines are kept whole.
"""Families on integer points in the plane and on counting (modular arithmetic, heaps)."""

from __future__ import annotations

import functools
import heapq
import random
from collections import Counter

from rebench.environments.rust_codecontests_inference.problems.base import (
    Family,
    Size,
    Variant,
    ints,
    lines,
)
from rebench.environments.rust_codecontests_inference.problems.families_d import _pick


def _gen_points(rng: random.Random, size: Size) -> str:
    n = _pick(rng, size, (1, 6), (200, 1000), (1, 2))
    hi = 5 if size == "small" else 10**9
    pts = [(rng.randint(-hi, hi), rng.randint(-hi, hi)) for _ in range(n)]
    return lines(n, *pts)


def _points(text: str) -> list[tuple[int, int]]:
    v = ints(text)
    return list(zip(v[1::2], v[2::2], strict=True))


def _manhattan(pts: list[tuple[int, int]]) -> int:
    s = [x + y for x, y in pts]
    d = [x - y for x, y in pts]
    return max(max(s) - min(s), max(d) - min(d))


_RS_PTS = "let n = rd!(usize);\nlet p: Vec<(i64, i64)> = (0..n).map(|_| (rd!(i64), rd!(i64))).collect();\n"

POINTS = Family(
    key="points",
    input_text="The first line contains n (1 <= n <= 1000); each of the next n lines a point x y "
    "(|x|, |y| <= 10^9).",
    gen=_gen_points,
    variants=(
        Variant("quadrant", "First Quadrant", 1,
                "Count the points with x > 0 and y > 0.", "Print one integer.",
                lambda t: str(sum(1 for x, y in _points(t) if x > 0 and y > 0)),
                _RS_PTS + "let c = p.iter().filter(|&&(x, y)| x > 0 && y > 0).count();\n"
                'writeln!(o, "{}", c).unwrap();'),
        Variant("manhattan", "Taxi Spread", 2,
                "Print the largest Manhattan distance |x1 - x2| + |y1 - y2| between two of the "
                "points (0 if there is one point).", "Print one integer.",
                lambda t: str(_manhattan(_points(t))),
                _RS_PTS + "let s: Vec<i64> = p.iter().map(|&(x, y)| x + y).collect();\n"
                "let d: Vec<i64> = p.iter().map(|&(x, y)| x - y).collect();\n"
                "let r1 = s.iter().max().unwrap() - s.iter().min().unwrap();\n"
                "let r2 = d.iter().max().unwrap() - d.iter().min().unwrap();\n"
                'writeln!(o, "{}", r1.max(r2)).unwrap();'),
        Variant("box", "Fence Area", 1,
                "Print the area of the smallest axis-parallel rectangle containing all points.",
                "Print one integer.",
                lambda t: str((max(x for x, _ in _points(t)) - min(x for x, _ in _points(t)))
                              * (max(y for _, y in _points(t)) - min(y for _, y in _points(t)))),
                _RS_PTS + "let (x0, x1) = (p.iter().map(|q| q.0).min().unwrap(), p.iter().map(|q| q.0).max().unwrap());\n"
                "let (y0, y1) = (p.iter().map(|q| q.1).min().unwrap(), p.iter().map(|q| q.1).max().unwrap());\n"
                "let area = (x1 - x0) as i128 * (y1 - y0) as i128;\nwriteln!(o, \"{}\", area).unwrap();"),
        Variant("rows", "Same Latitude", 2,
                "Print the number of pairs of points with equal y coordinate.", "Print one integer.",
                lambda t: str(sum(c * (c - 1) // 2 for c in Counter(y for _, y in _points(t)).values())),
                _RS_PTS + "let mut cnt = std::collections::HashMap::new();\n"
                "for &(_, y) in &p { *cnt.entry(y).or_insert(0i64) += 1; }\n"
                "let total: i64 = cnt.values().map(|&c| c * (c - 1) / 2).sum();\nwriteln!(o, \"{}\", total).unwrap();",
                gen=lambda rng, size: lines(n := _pick(rng, size, (1, 6), (200, 1000), (1, 2)),
                                            *[(rng.randint(-9, 9), rng.randint(0, 4)) for _ in range(n)])),
        Variant("turns", "Polyline Turns", 2,
                "The points form a path in the given order. Count the points where the path turns "
                "left (counter-clockwise), using the cross product of consecutive segments.",
                "Print one integer.",
                lambda t: str(sum(1 for a, b, c in zip(_points(t), _points(t)[1:], _points(t)[2:], strict=False)
                                  if (b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0]) > 0)),
                _RS_PTS + "let mut c = 0;\nfor i in 2..n {\n    let (a, b, d) = (p[i - 2], p[i - 1], p[i]);\n"
                "    let cross = (b.0 - a.0) as i128 * (d.1 - b.1) as i128 - (b.1 - a.1) as i128 * (d.0 - b.0) as i128;\n"
                "    if cross > 0 { c += 1; }\n}\nwriteln!(o, \"{}\", c).unwrap();"),
    ),
)


MOD = 10**9 + 7


@functools.cache
def _factorials(limit: int) -> list[int]:
    f = [1] * (limit + 1)
    for i in range(1, limit + 1):
        f[i] = f[i - 1] * i % MOD
    return f


def _binom(n: int, k: int) -> int:
    f = _factorials(10**6)
    return f[n] * pow(f[k], MOD - 2, MOD) % MOD * pow(f[n - k], MOD - 2, MOD) % MOD


def _running_median(xs: list[int]) -> list[int]:
    lo: list[int] = []
    hi: list[int] = []
    out = []
    for x in xs:
        if lo and x > -lo[0]:
            heapq.heappush(hi, x)
        else:
            heapq.heappush(lo, -x)
        if len(lo) > len(hi) + 1:
            heapq.heappush(hi, -heapq.heappop(lo))
        elif len(hi) > len(lo):
            heapq.heappush(lo, -heapq.heappop(hi))
        out.append(-lo[0])
    return out


def _stones(xs: list[int]) -> int:
    h = [-x for x in xs]
    heapq.heapify(h)
    while len(h) > 1:
        a, b = -heapq.heappop(h), -heapq.heappop(h)
        if a != b:
            heapq.heappush(h, -(a - b))
    return -h[0] if h else 0


def _fib(n: int) -> int:
    def fd(k: int) -> tuple[int, int]:
        if k == 0:
            return 0, 1
        a, b = fd(k >> 1)
        c = a * ((2 * b - a) % MOD) % MOD
        d = (a * a + b * b) % MOD
        return (d, (c + d) % MOD) if k & 1 else (c, d)

    return fd(n)[0]


_RS_VEC = "let n = rd!(usize);\nlet a: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"

COUNTING = Family(
    key="counting",
    input_text="The first line contains n (1 <= n <= 1000); the second n integers (1 <= a_i <= 10^9).",
    gen=lambda rng, size: lines(len(a := [rng.randint(1, 10**9 if size == "large" else 9) for _ in range(_pick(rng, size, (1, 6), (200, 1000), (1, 2)))]), a),
    variants=(
        Variant("median", "Running Median", 3,
                "After each element is added print the lower median of the elements so far "
                "(the ceil(k/2)-th smallest of k elements).", "Print n integers on one line.",
                lambda t: " ".join(map(str, _running_median(ints(t)[1:]))),
                _RS_VEC + "let mut seen: Vec<i64> = Vec::new();\nlet mut out = Vec::new();\nfor &x in &a {\n"
                "    let p = seen.partition_point(|&y| y < x);\n    seen.insert(p, x);\n"
                "    out.push(seen[(seen.len() + 1) / 2 - 1].to_string());\n}\nwriteln!(o, \"{}\", out.join(\" \")).unwrap();"),
        Variant("stones", "Stone Smash", 2,
                "Repeatedly take the two heaviest stones x >= y; if x = y both vanish, else one "
                "stone of weight x - y remains. Print the weight of the last stone, or 0.",
                "Print one integer.", lambda t: str(_stones(ints(t)[1:])),
                _RS_VEC + "let mut h: std::collections::BinaryHeap<i64> = a.into_iter().collect();\n"
                "while h.len() > 1 {\n    let x = h.pop().unwrap();\n    let y = h.pop().unwrap();\n"
                "    if x != y { h.push(x - y); }\n}\nwriteln!(o, \"{}\", h.pop().unwrap_or(0)).unwrap();"),
        Variant("fib", "Rabbit Census", 3,
                "Print the n-th Fibonacci number modulo 1000000007 (F_0 = 0, F_1 = 1).",
                "Print one integer.", lambda t: str(_fib(ints(t)[0])),
                "let n = rd!(u64);\nconst M: u64 = 1_000_000_007;\n"
                "fn mul(a: [[u64; 2]; 2], b: [[u64; 2]; 2]) -> [[u64; 2]; 2] {\n    let mut c = [[0u64; 2]; 2];\n"
                "    for i in 0..2 { for j in 0..2 { for k in 0..2 { c[i][j] = (c[i][j] + a[i][k] * b[k][j]) % M; } } }\n    c\n}\n"
                "let (mut r, mut b, mut e) = ([[1, 0], [0, 1]], [[1, 1], [1, 0]], n);\n"
                "while e > 0 { if e & 1 == 1 { r = mul(r, b); } b = mul(b, b); e >>= 1; }\nwriteln!(o, \"{}\", r[0][1]).unwrap();",
                gen=lambda rng, size: lines(_pick(rng, size, (0, 30), (10**17, 10**18), (0, 1, 2, 10**18))),
                input_text="One integer n (0 <= n <= 10^18)."),
        Variant("binom", "Committee Count", 3,
                "For each query print C(n, k) modulo 1000000007.", "Print t lines.",
                lambda t: "\n".join(str(_binom(n, k)) for n, k in zip(ints(t)[1::2], ints(t)[2::2], strict=True)),
                "let t = rd!(usize);\nconst M: u64 = 1_000_000_007;\nlet mx = 1_000_001;\nlet mut f = vec![1u64; mx];\n"
                "for i in 1..mx { f[i] = f[i - 1] * i as u64 % M; }\n"
                "let pw = |mut b: u64, mut e: u64| -> u64 { let mut r = 1; b %= M; while e > 0 { if e & 1 == 1 { r = r * b % M; } b = b * b % M; e >>= 1; } r };\n"
                "for _ in 0..t {\n    let (n, k) = (rd!(usize), rd!(usize));\n"
                "    let r = f[n] * pw(f[k], M - 2) % M * pw(f[n - k], M - 2) % M;\n    writeln!(o, \"{}\", r).unwrap();\n}",
                gen=lambda rng, size: lines(len(q := [(n := _pick(rng, size, (0, 10), (10**5, 10**6), (0, 10**6)), rng.randint(0, n))
                                                      for _ in range(rng.randint(1, 4 if size != "large" else 50))]), *q),
                input_text="The first line contains t (1 <= t <= 50); each of the next t lines n "
                "and k (0 <= k <= n <= 10^6)."),
        Variant("noadj", "Quiet Bits", 3,
                "Print the number of binary strings of length n with no two adjacent ones, modulo "
                "1000000007.", "Print one integer.", lambda t: str(_fib(ints(t)[0] + 2)),
                "let n = rd!(usize);\nconst M: u64 = 1_000_000_007;\nlet (mut end0, mut end1) = (1u64, 1u64);\n"
                "for _ in 1..n { let e0 = (end0 + end1) % M; end1 = end0; end0 = e0; }\n"
                'writeln!(o, "{}", (end0 + end1) % M).unwrap();',
                gen=lambda rng, size: lines(_pick(rng, size, (1, 20), (10**5, 10**6), (1, 2))),
                input_text="One integer n (1 <= n <= 10^6)."),
    ),
)
