# ruff: noqa: E501 - the Rust reference programs are data; their lines are kept whole.
"""Families on range queries, subarrays and sorting."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable

from rebench.environments.rust_codecontests_inference.problems.base import (
    Family,
    Generator,
    Oracle,
    Size,
    Variant,
    ints,
    lines,
)
from rebench.environments.rust_codecontests_inference.problems.families_a import BIG, _array

MOD = 10**9 + 7


def _gen_queries(rng: random.Random, size: Size, lo: int = -BIG) -> str:
    arr = _array(rng, size, lo, BIG)
    n = len(arr)
    q = 3 if size != "large" else rng.randint(100, 500)
    qs = []
    for _ in range(q):
        a, b = sorted((rng.randint(1, n), rng.randint(1, n)))
        qs.append((a, b))
    return lines(n, arr, q, *qs)


def _parse_queries(text: str) -> tuple[list[int], list[tuple[int, int]]]:
    v = ints(text)
    n = v[0]
    arr, q = v[1 : n + 1], v[n + 1]
    rest = v[n + 2 :]
    return arr, [(rest[2 * i], rest[2 * i + 1]) for i in range(q)]


def _range_oracle(fn: Callable[[list[int]], object]) -> Oracle:
    def oracle(text: str) -> str:
        arr, qs = _parse_queries(text)
        return "\n".join(str(fn(arr[a - 1 : b])) for a, b in qs)

    return oracle


def _xor(xs: list[int]) -> int:
    r = 0
    for x in xs:
        r ^= x
    return r


_RS_Q = ("let n = rd!(usize);\nlet a: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"
         "let q = rd!(usize);\n")

RANGES = Family(
    key="ranges",
    input_text="The first line contains n (1 <= n <= 1000), the second n integers a_i "
    "(|a_i| <= 10^9). Then q (1 <= q <= 500) and q lines with l r (1 <= l <= r <= n).",
    gen=_gen_queries,
    variants=(
        Variant("sum", "Segment Sums", 2, "For each query print a_l + ... + a_r.",
                "Print q lines.", _range_oracle(sum),
                _RS_Q + "let mut p = vec![0i64; n + 1];\nfor i in 0..n { p[i + 1] = p[i] + a[i]; }\n"
                "for _ in 0..q {\n    let (l, r) = (rd!(usize), rd!(usize));\n"
                "    writeln!(o, \"{}\", p[r] - p[l - 1]).unwrap();\n}"),
        Variant("xor", "Segment Parity Mask", 2, "For each query print a_l xor ... xor a_r.",
                "Print q lines.", _range_oracle(_xor),
                _RS_Q + "let mut p = vec![0i64; n + 1];\nfor i in 0..n { p[i + 1] = p[i] ^ a[i]; }\n"
                "for _ in 0..q {\n    let (l, r) = (rd!(usize), rd!(usize));\n"
                "    writeln!(o, \"{}\", p[r] ^ p[l - 1]).unwrap();\n}",
                gen=lambda rng, size: _gen_queries(rng, size, 0),
                input_text="The first line contains n (1 <= n <= 1000), the second n integers "
                "a_i (0 <= a_i <= 10^9). Then q (1 <= q <= 500) and q lines with l r "
                "(1 <= l <= r <= n)."),
        Variant("evens", "Even Readings", 2,
                "For each query print how many of a_l..a_r are even.",
                "Print q lines.", _range_oracle(lambda xs: sum(x % 2 == 0 for x in xs)),
                _RS_Q + "let mut p = vec![0i64; n + 1];\n"
                "for i in 0..n { p[i + 1] = p[i] + if a[i] % 2 == 0 { 1 } else { 0 }; }\n"
                "for _ in 0..q {\n    let (l, r) = (rd!(usize), rd!(usize));\n"
                "    writeln!(o, \"{}\", p[r] - p[l - 1]).unwrap();\n}"),
        Variant("min", "Segment Floor", 2, "For each query print the minimum of a_l..a_r.",
                "Print q lines.", _range_oracle(min),
                _RS_Q + "for _ in 0..q {\n    let (l, r) = (rd!(usize), rd!(usize));\n"
                "    let m = a[l - 1..r].iter().min().unwrap();\n"
                "    writeln!(o, \"{}\", m).unwrap();\n}"),
        Variant("updates", "Batch Deposits", 2,
                "Each query (l, r) adds l * r to every a_i with l <= i <= r. Print the array "
                "after all queries.",
                "Print n integers on one line.",
                lambda t: _apply_updates(t),
                _RS_Q + "let mut d = vec![0i64; n + 2];\nfor _ in 0..q {\n"
                "    let (l, r) = (rd!(usize), rd!(usize));\n    let v = (l * r) as i64;\n"
                "    d[l] += v;\n    d[r + 1] -= v;\n}\nlet mut cur = 0i64;\n"
                "let mut out = Vec::with_capacity(n);\nfor i in 1..=n {\n    cur += d[i];\n"
                "    out.push((a[i - 1] + cur).to_string());\n}\n"
                "writeln!(o, \"{}\", out.join(\" \")).unwrap();"),
    ),
)


def _apply_updates(text: str) -> str:
    arr, qs = _parse_queries(text)
    arr = list(arr)
    for a, b in qs:
        for i in range(a - 1, b):
            arr[i] += a * b
    return " ".join(map(str, arr))


def _kadane(xs: list[int]) -> int:
    best, cur = xs[0], 0
    for x in xs:
        cur = max(x, cur + x)
        best = max(best, cur)
    return best


def _longest_inc(xs: list[int]) -> int:
    best = cur = 1
    for x, y in itertools.pairwise(xs):
        cur = cur + 1 if y > x else 1
        best = max(best, cur)
    return best


def _gen_k_array(lo: int, klo: int, khi: int) -> Generator:
    def gen(rng: random.Random, size: Size) -> str:
        arr = _array(rng, size, lo, BIG if size != "small" else 9)
        if size == "small":
            arr = [rng.randint(lo if lo > -9 else -3, 5) for _ in arr]
        k = rng.randint(klo, max(klo, min(khi, len(arr)))) if khi else rng.randint(0, 10)
        if khi == 0 and size == "large":
            k = rng.randint(-20, 20)
        return lines(len(arr), k, arr)

    return gen


def _count_sum_k(text: str) -> int:
    v = ints(text)
    n, k, arr = v[0], v[1], v[2:]
    seen: Counter[int] = Counter({0: 1})
    s = c = 0
    for x in arr[:n]:
        s += x
        c += seen[s - k]
        seen[s] += 1
    return c


def _min_len_at_least(text: str) -> int:
    v = ints(text)
    n, s, arr = v[0], v[1], v[2:]
    best, total, lo = 0, 0, 0
    for hi in range(n):
        total += arr[hi]
        while total >= s:
            best = hi - lo + 1 if best == 0 else min(best, hi - lo + 1)
            total -= arr[lo]
            lo += 1
    return best


def _max_window(text: str) -> int:
    v = ints(text)
    n, k, arr = v[0], v[1], v[2:]
    return max(sum(arr[i : i + k]) for i in range(n - k + 1))


def _gen_small_vals(rng: random.Random, size: Size) -> str:
    n = {"small": rng.randint(1, 6), "edge": 1, "large": rng.randint(200, 1000)}[size]
    arr = [rng.randint(-3, 3) for _ in range(n)]
    return lines(n, rng.randint(-3, 3), arr)


def _gen_positive_target(rng: random.Random, size: Size) -> str:
    arr = _array(rng, size, 1, 10**6)
    s = rng.randint(1, max(2, sum(arr) + (5 if rng.random() < 0.3 else -1)))
    return lines(len(arr), s, arr)


SUBARRAYS = Family(
    key="subarrays",
    input_text="The first line contains n (1 <= n <= 1000); the second n integers "
    "(|a_i| <= 10^9).",
    gen=lambda rng, size: lines(len(a := _array(rng, size)), a),
    variants=(
        Variant("kadane", "Best Stretch", 2,
                "Print the largest possible sum of a non-empty contiguous subarray.",
                "Print one integer.", lambda t: str(_kadane(ints(t)[1:])),
                "let n = rd!(usize);\nlet mut best = i64::MIN;\nlet mut cur: i64 = 0;\n"
                "for _ in 0..n {\n    let x = rd!(i64);\n    cur = if cur + x > x { cur + x } else { x };\n"
                "    if cur > best { best = cur; }\n}\nwriteln!(o, \"{}\", best).unwrap();"),
        Variant("climb", "Longest Climb", 2,
                "Print the length of the longest contiguous strictly increasing segment.",
                "Print one integer.", lambda t: str(_longest_inc(ints(t)[1:])),
                "let n = rd!(usize);\nlet a: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"
                "let (mut best, mut cur) = (1, 1);\nfor i in 1..n {\n"
                "    if a[i] > a[i - 1] { cur += 1; } else { cur = 1; }\n"
                "    if cur > best { best = cur; }\n}\nwriteln!(o, \"{}\", best).unwrap();"),
        Variant("sumk", "Exact Budget Runs", 3,
                "Print the number of contiguous subarrays whose sum is exactly k.",
                "Print one integer.", lambda t: str(_count_sum_k(t)),
                "let n = rd!(usize);\nlet k = rd!(i64);\nlet mut seen = std::collections::HashMap::new();\n"
                "seen.insert(0i64, 1i64);\nlet (mut s, mut c) = (0i64, 0i64);\nfor _ in 0..n {\n"
                "    s += rd!(i64);\n    c += seen.get(&(s - k)).copied().unwrap_or(0);\n"
                "    *seen.entry(s).or_insert(0) += 1;\n}\nwriteln!(o, \"{}\", c).unwrap();",
                gen=_gen_small_vals,
                input_text="The first line contains n and k (1 <= n <= 1000, |k| <= 3); the "
                "second n integers (|a_i| <= 3)."),
        Variant("minlen", "Shortest Haul", 3,
                "All a_i are positive. Print the minimum length of a contiguous subarray with "
                "sum at least s, or 0 if there is none.",
                "Print one integer.", lambda t: str(_min_len_at_least(t)),
                "let n = rd!(usize);\nlet s = rd!(i64);\nlet a: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"
                "let (mut best, mut total, mut lo) = (0usize, 0i64, 0usize);\nfor hi in 0..n {\n"
                "    total += a[hi];\n    while total >= s {\n"
                "        let len = hi - lo + 1;\n        if best == 0 || len < best { best = len; }\n"
                "        total -= a[lo];\n        lo += 1;\n    }\n}\nwriteln!(o, \"{}\", best).unwrap();",
                gen=_gen_positive_target,
                input_text="The first line contains n and s (1 <= n <= 1000, 1 <= s <= 10^9); "
                "the second n integers (1 <= a_i <= 10^6)."),
        Variant("window", "Best Week", 2,
                "Print the maximum sum of a contiguous subarray of length exactly k.",
                "Print one integer.", lambda t: str(_max_window(t)),
                "let n = rd!(usize);\nlet k = rd!(usize);\nlet a: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"
                "let mut s: i64 = a[..k].iter().sum();\nlet mut best = s;\nfor i in k..n {\n"
                "    s += a[i] - a[i - k];\n    if s > best { best = s; }\n}\nwriteln!(o, \"{}\", best).unwrap();",
                gen=_gen_k_array(-BIG, 1, 1000),
                input_text="The first line contains n and k (1 <= k <= n <= 1000); the second "
                "n integers (|a_i| <= 10^9)."),
    ),
)


def _inversions(xs: list[int]) -> int:
    return sum(1 for i in range(len(xs)) for j in range(i + 1, len(xs)) if xs[i] > xs[j])


def _pairs_sum(text: str) -> int:
    v = ints(text)
    n, x, arr = v[0], v[1], v[2:]
    seen: Counter[int] = Counter()
    c = 0
    for a in arr[:n]:
        c += seen[x - a]
        seen[a] += 1
    return c


def _gen_pairs(rng: random.Random, size: Size) -> str:
    n = {"small": rng.randint(2, 6), "edge": 2, "large": rng.randint(300, 1000)}[size]
    hi = 5 if size != "large" else 50
    arr = [rng.randint(0, hi) for _ in range(n)]
    return lines(n, rng.randint(0, 2 * hi), arr)


SORTING = Family(
    key="sorting",
    input_text="The first line contains n (2 <= n <= 1000); the second n integers "
    "(|a_i| <= 10^9).",
    gen=lambda rng, size: lines(len(a := _array(rng, size, min_n=2)), a),
    variants=(
        Variant("kth", "Kth Smallest", 2, "Print the k-th smallest of the n integers "
                "(counting duplicates).", "Print one integer.",
                lambda t: str(sorted(ints(t)[2:])[ints(t)[1] - 1]),
                "let n = rd!(usize);\nlet k = rd!(usize);\nlet mut a: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"
                "a.sort();\nwriteln!(o, \"{}\", a[k - 1]).unwrap();",
                gen=_gen_k_array(-BIG, 1, 1000),
                input_text="The first line contains n and k (1 <= k <= n <= 1000); the second "
                "n integers (|a_i| <= 10^9)."),
        Variant("pairs", "Matching Pairs", 2,
                "Print the number of pairs i < j with a_i + a_j = x.", "Print one integer.",
                lambda t: str(_pairs_sum(t)),
                "let n = rd!(usize);\nlet x = rd!(i64);\nlet mut cnt = std::collections::HashMap::new();\n"
                "let mut c: i64 = 0;\nfor _ in 0..n {\n    let a = rd!(i64);\n"
                "    c += cnt.get(&(x - a)).copied().unwrap_or(0);\n    *cnt.entry(a).or_insert(0i64) += 1;\n}\n"
                "writeln!(o, \"{}\", c).unwrap();",
                gen=_gen_pairs, input_text="The first line contains n and x (2 <= n <= 1000); "
                "the second n integers (0 <= a_i <= 50)."),
        Variant("closest", "Closest Pair", 2,
                "Print the minimum of |a_i - a_j| over all pairs i != j.", "Print one integer.",
                lambda t: str(min(y - x for x, y in zip(sorted(ints(t)[1:]), sorted(ints(t)[1:])[1:], strict=False))),
                "let n = rd!(usize);\nlet mut a: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"
                "a.sort();\nlet mut best = i64::MAX;\nfor i in 1..n { best = best.min(a[i] - a[i - 1]); }\n"
                "writeln!(o, \"{}\", best).unwrap();"),
        Variant("inversions", "Disorder", 3,
                "Print the number of pairs i < j with a_i > a_j.", "Print one integer.",
                lambda t: str(_inversions(ints(t)[1:])),
                "let n = rd!(usize);\nlet a: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"
                "let mut c: i64 = 0;\nfor i in 0..n {\n    for j in i + 1..n {\n"
                "        if a[i] > a[j] { c += 1; }\n    }\n}\nwriteln!(o, \"{}\", c).unwrap();"),
        Variant("unique", "Catalogue", 1,
                "Print the distinct values in increasing order.", "Print them on one line.",
                lambda t: " ".join(map(str, sorted(set(ints(t)[1:])))),
                "let n = rd!(usize);\nlet mut a: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"
                "a.sort();\na.dedup();\nlet s: Vec<String> = a.iter().map(|x| x.to_string()).collect();\n"
                "writeln!(o, \"{}\", s.join(\" \")).unwrap();"),
    ),
)


