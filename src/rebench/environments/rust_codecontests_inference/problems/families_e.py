# ruff: noqa: E501 - the Rust reference programs are data; their lines are kept whole.
"""Families on string pairs, matrices, binary search and sliding windows."""

from __future__ import annotations

import bisect
import math
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

MOD = 10**9 + 7


def _gen_pair(rng: random.Random, size: Size) -> str:
    n = _pick(rng, size, (1, 6), (200, 2000), (1,))
    alpha = "ab" if size != "large" else rng.choice(["ab", "abc"])
    s = "".join(rng.choice(alpha) for _ in range(n))
    mode = rng.randrange(3)
    if mode == 0:
        t = "".join(rng.sample(s, len(s)))
    elif mode == 1:
        t = s[rng.randrange(len(s)) :][: rng.randint(1, 4)]
    else:
        t = "".join(rng.choice(alpha) for _ in range(max(1, min(n, rng.randint(1, 5)))))
    return lines(s, t)


def _occurrences(s: str, t: str) -> int:
    return sum(1 for i in range(len(s) - len(t) + 1) if s[i : i + len(t)] == t)


def _is_subseq(s: str, t: str) -> bool:
    it = iter(s)
    return all(c in it for c in t)


def _hamming(s: str, t: str) -> int:
    return -1 if len(s) != len(t) else sum(a != b for a, b in zip(s, t, strict=True))


_RS_ST = "let s: Vec<u8> = rd!(String).into_bytes();\nlet t: Vec<u8> = rd!(String).into_bytes();\n"

PAIRS = Family(
    key="pairs",
    input_text="Two lines with strings s and t of lowercase letters (1 <= |s|, |t| <= 2000).",
    gen=_gen_pair,
    variants=(
        Variant("anagram", "Shuffled Word", 1, "Decide whether t is a rearrangement of s.",
                "Print YES or NO.", lambda x: "YES" if sorted(x.split()[0]) == sorted(x.split()[1]) else "NO",
                _RS_ST + "let (mut a, mut b) = (s.clone(), t.clone());\na.sort();\nb.sort();\n"
                'writeln!(o, "{}", if a == b { "YES" } else { "NO" }).unwrap();'),
        Variant("subseq", "Hidden Message", 2,
                "Decide whether t can be obtained from s by deleting some letters.",
                "Print YES or NO.", lambda x: "YES" if _is_subseq(*x.split()) else "NO",
                _RS_ST + "let mut j = 0;\nfor &c in &s { if j < t.len() && t[j] == c { j += 1; } }\n"
                'writeln!(o, "{}", if j == t.len() { "YES" } else { "NO" }).unwrap();'),
        Variant("count", "Echo Count", 2,
                "Print how many times t occurs in s as a contiguous substring (occurrences may "
                "overlap).", "Print one integer.", lambda x: str(_occurrences(*x.split())),
                _RS_ST + "let mut c = 0;\nif t.len() <= s.len() {\n"
                "    for i in 0..=s.len() - t.len() { if s[i..i + t.len()] == t[..] { c += 1; } }\n}\n"
                'writeln!(o, "{}", c).unwrap();'),
        Variant("hamming", "Bit Rot", 1,
                "Print the number of positions where s and t differ, or -1 if their lengths differ.",
                "Print one integer.", lambda x: str(_hamming(*x.split())),
                _RS_ST + "let d: i64 = if s.len() != t.len() { -1 } else {\n"
                "    s.iter().zip(t.iter()).filter(|(a, b)| a != b).count() as i64\n};\n"
                'writeln!(o, "{}", d).unwrap();'),
        Variant("prefix", "Common Start", 1,
                "Print the length of the longest common prefix of s and t.", "Print one integer.",
                lambda x: str(len(__import__("os").path.commonprefix(x.split()))),
                _RS_ST + "let mut k = 0;\nwhile k < s.len() && k < t.len() && s[k] == t[k] { k += 1; }\n"
                'writeln!(o, "{}", k).unwrap();'),
    ),
)


def _gen_matrix(rng: random.Random, size: Size) -> str:
    n, m = {"small": (rng.randint(1, 3), rng.randint(1, 4)), "edge": rng.choice([(1, 1), (1, 4), (3, 1)]),
            "large": (rng.randint(20, 60), rng.randint(20, 60))}[size]
    hi = 9 if size == "small" else 10**9
    rows = [[rng.randint(-hi, hi) for _ in range(m)] for _ in range(n)]
    return lines(f"{n} {m}", *rows)


def _parse_matrix(text: str) -> list[list[int]]:
    v = ints(text)
    n, m = v[0], v[1]
    return [v[2 + i * m : 2 + (i + 1) * m] for i in range(n)]


def _spiral(a: list[list[int]]) -> list[int]:
    out: list[int] = []
    while a:
        out += a.pop(0)
        a = [list(r) for r in zip(*a, strict=True)][::-1] if a and a[0] else []
    return out


def _saddles(a: list[list[int]]) -> int:
    cols = list(zip(*a, strict=True))
    return sum(1 for i, r in enumerate(a) for j, x in enumerate(r) if x == min(r) and x == max(cols[j]))


def _fmt_rows(rows: list[list[int]] | list[tuple[int, ...]]) -> str:
    return "\n".join(" ".join(map(str, r)) for r in rows)


_RS_MAT = "let n = rd!(usize);\nlet m = rd!(usize);\nlet a: Vec<Vec<i64>> = (0..n).map(|_| (0..m).map(|_| rd!(i64)).collect()).collect();\n"
_RS_PRINT = ("for r in &out {\n    let s: Vec<String> = r.iter().map(|x| x.to_string()).collect();\n"
             "    writeln!(o, \"{}\", s.join(\" \")).unwrap();\n}")

MATRICES = Family(
    key="matrices",
    input_text="The first line contains n and m (1 <= n, m <= 60); then n lines of m integers "
    "(|a_ij| <= 10^9).",
    gen=_gen_matrix,
    variants=(
        Variant("rowsum", "Richest Row", 1, "Print the largest row sum.", "Print one integer.",
                lambda t: str(max(sum(r) for r in _parse_matrix(t))),
                _RS_MAT + "let best = a.iter().map(|r| r.iter().sum::<i64>()).max().unwrap();\nlet _ = (n, m);\n"
                'writeln!(o, "{}", best).unwrap();'),
        Variant("transpose", "Flip Table", 1, "Print the transpose of the matrix (m lines of n "
                "integers).", "Print m lines.",
                lambda t: _fmt_rows(list(zip(*_parse_matrix(t), strict=True))),
                _RS_MAT + "let out: Vec<Vec<i64>> = (0..m).map(|j| (0..n).map(|i| a[i][j]).collect()).collect();\n" + _RS_PRINT),
        Variant("rotate", "Quarter Turn", 2, "Print the matrix rotated 90 degrees clockwise (m "
                "lines of n integers).", "Print m lines.",
                lambda t: _fmt_rows([list(r) for r in zip(*_parse_matrix(t)[::-1], strict=True)]),
                _RS_MAT + "let out: Vec<Vec<i64>> = (0..m).map(|j| (0..n).rev().map(|i| a[i][j]).collect()).collect();\n" + _RS_PRINT),
        Variant("spiral", "Snail Read", 2, "Print the elements in clockwise spiral order starting "
                "at the top-left corner.", "Print n*m integers on one line.",
                lambda t: " ".join(map(str, _spiral(_parse_matrix(t)))),
                _RS_MAT + "let (mut top, mut bot, mut left, mut right) = (0i64, n as i64 - 1, 0i64, m as i64 - 1);\n"
                "let mut out: Vec<String> = Vec::new();\nwhile top <= bot && left <= right {\n"
                "    for j in left..=right { out.push(a[top as usize][j as usize].to_string()); }\n    top += 1;\n"
                "    for i in top..=bot { out.push(a[i as usize][right as usize].to_string()); }\n    right -= 1;\n"
                "    if top <= bot { for j in (left..=right).rev() { out.push(a[bot as usize][j as usize].to_string()); } bot -= 1; }\n"
                "    if left <= right { for i in (top..=bot).rev() { out.push(a[i as usize][left as usize].to_string()); } left += 1; }\n"
                "}\nwriteln!(o, \"{}\", out.join(\" \")).unwrap();"),
        Variant("saddle", "Saddle Points", 2, "Count the cells that are a minimum of their row and a "
                "maximum of their column (ties allowed).", "Print one integer.",
                lambda t: str(_saddles(_parse_matrix(t))),
                _RS_MAT + "let mut c = 0;\nfor i in 0..n {\n    let rmin = *a[i].iter().min().unwrap();\n"
                "    for j in 0..m {\n        let cmax = (0..n).map(|k| a[k][j]).max().unwrap();\n"
                "        if a[i][j] == rmin && a[i][j] == cmax { c += 1; }\n    }\n}\nwriteln!(o, \"{}\", c).unwrap();",
                gen=lambda rng, size: _gen_matrix(rng, size).replace("-", "") if size != "large" else
                lines("3 3", [1, 2, 3], [4, 5, 6], [7, 8, 9]) if rng.random() < 0.3 else _gen_matrix(rng, size)),
    ),
)


def _gen_sorted_queries(rng: random.Random, size: Size) -> str:
    n = _pick(rng, size, (1, 6), (200, 1000), (1,))
    hi = 10 if size == "small" else 10**9
    arr = sorted(rng.randint(0, hi) for _ in range(n))
    qs = [rng.choice(arr) if rng.random() < 0.5 else rng.randint(-1, hi + 1) for _ in range(rng.randint(1, 5 if size != "large" else 300))]
    return lines(n, arr, len(qs), qs)


def _ship(text: str) -> int:
    v = ints(text)
    n, d, w = v[0], v[1], v[2:]
    lo, hi = max(w), sum(w)
    while lo < hi:
        mid = (lo + hi) // 2
        days, load = 1, 0
        for x in w[:n]:
            if load + x > mid:
                days, load = days + 1, 0
            load += x
        if days <= d:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _cows(text: str) -> int:
    v = ints(text)
    n, c, pos = v[0], v[1], sorted(v[2:])
    lo, hi = 0, pos[-1] - pos[0]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        cnt, last = 1, pos[0]
        for p in pos[1:n]:
            if p - last >= mid:
                cnt, last = cnt + 1, p
        if cnt >= c:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _sq(text: str) -> str:
    return "\n".join(str(math.isqrt(x)) for x in ints(text)[1:])


_RS_SQ = ("let n = rd!(usize);\nlet a: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\nlet q = rd!(usize);\n"
          "for _ in 0..q {\n    let x = rd!(i64);\n")

SEARCH = Family(
    key="search",
    input_text="The first line contains n (1 <= n <= 1000); the second n integers in non-decreasing "
    "order (0 <= a_i <= 10^9); then q (1 <= q <= 300) and a line of q integers x.",
    gen=_gen_sorted_queries,
    variants=(
        Variant("atmost", "Price Check", 2, "For each x print how many a_i are at most x.",
                "Print q integers on one line.",
                lambda t: " ".join(str(bisect.bisect_right(_sorted_part(t), x)) for x in _query_part(t)),
                _RS_SQ + "    let c = a.partition_point(|&y| y <= x);\n    write!(o, \"{} \", c).unwrap();\n}\nwriteln!(o).unwrap();"),
        Variant("find", "Ledger Lookup", 2, "For each x print the 1-based position of the first a_i "
                "equal to x, or -1 if x does not occur.", "Print q integers on one line.",
                lambda t: " ".join(str(_first_pos(_sorted_part(t), x)) for x in _query_part(t)),
                _RS_SQ + "    let p = a.partition_point(|&y| y < x);\n"
                "    let r: i64 = if p < n && a[p] == x { p as i64 + 1 } else { -1 };\n"
                "    write!(o, \"{} \", r).unwrap();\n}\nwriteln!(o).unwrap();"),
        Variant("isqrt", "Square Root Floor", 2, "For each n print the largest integer r with r*r <= n.",
                "Print t lines.", _sq,
                "let t = rd!(usize);\nfor _ in 0..t {\n    let n = rd!(u64);\n    let mut r = (n as f64).sqrt() as u64;\n"
                "    while r > 0 && (r as u128) * (r as u128) > n as u128 { r -= 1; }\n"
                "    while ((r + 1) as u128) * ((r + 1) as u128) <= n as u128 { r += 1; }\n"
                "    writeln!(o, \"{}\", r).unwrap();\n}",
                gen=lambda rng, size: lines(len(xs := [_pick(rng, size, (0, 200), (10**17, 10**18), (0, 1, 10**18, 999999999999999999))
                                                       for _ in range(rng.randint(1, 5 if size != "large" else 100))]), *xs),
                input_text="The first line contains t (1 <= t <= 100); each of the next t lines an "
                "integer n (0 <= n <= 10^18)."),
        Variant("ship", "Cargo Planner", 3,
                "Packages with weights w_1..w_n must be shipped in order within d days; each day "
                "a prefix of the remaining packages is loaded, total weight at most the ship's "
                "capacity. Print the minimum capacity.", "Print one integer.",
                lambda t: str(_ship(t)),
                "let n = rd!(usize);\nlet d = rd!(i64);\nlet w: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"
                "let (mut lo, mut hi) = (*w.iter().max().unwrap(), w.iter().sum::<i64>());\nwhile lo < hi {\n"
                "    let mid = (lo + hi) / 2;\n    let (mut days, mut load) = (1, 0i64);\n"
                "    for &x in &w { if load + x > mid { days += 1; load = 0; } load += x; }\n"
                "    if days <= d { hi = mid; } else { lo = mid + 1; }\n}\nwriteln!(o, \"{}\", lo).unwrap();",
                gen=lambda rng, size: lines(len(w := [rng.randint(1, 10**9 if size == "large" else 9) for _ in range(_pick(rng, size, (1, 6), (200, 1000), (1,)))]),
                                            rng.randint(1, len(w)), w),
                input_text="The first line contains n and d (1 <= d <= n <= 1000); the second n "
                "weights (1 <= w_i <= 10^9)."),
        Variant("cows", "Spread the Stalls", 3,
                "Place c cows in c of the n stalls (positions given) so that the minimum distance "
                "between two cows is as large as possible. Print that distance.",
                "Print one integer.", lambda t: str(_cows(t)),
                "let n = rd!(usize);\nlet c = rd!(usize);\nlet mut p: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"
                "p.sort();\nlet (mut lo, mut hi) = (0i64, p[n - 1] - p[0]);\nwhile lo < hi {\n"
                "    let mid = (lo + hi + 1) / 2;\n    let (mut cnt, mut last) = (1, p[0]);\n"
                "    for &x in &p[1..] { if x - last >= mid { cnt += 1; last = x; } }\n"
                "    if cnt >= c { lo = mid; } else { hi = mid - 1; }\n}\nwriteln!(o, \"{}\", lo).unwrap();",
                gen=lambda rng, size: lines(len(p := rng.sample(range(0, 10**9 if size == "large" else 30), _pick(rng, size, (2, 6), (200, 1000), (2,)))),
                                            rng.randint(2, len(p)), p),
                input_text="The first line contains n and c (2 <= c <= n <= 1000); the second n "
                "distinct positions (0 <= p_i <= 10^9)."),
    ),
)


def _sorted_part(text: str) -> list[int]:
    v = ints(text)
    return v[1 : 1 + v[0]]


def _query_part(text: str) -> list[int]:
    v = ints(text)
    return v[2 + v[0] :]


def _first_pos(arr: list[int], x: int) -> int:
    i = bisect.bisect_left(arr, x)
    return i + 1 if i < len(arr) and arr[i] == x else -1


def _window_distinct(text: str) -> str:
    v = ints(text)
    n, k, a = v[0], v[1], v[2:]
    return " ".join(str(len(set(a[i : i + k]))) for i in range(n - k + 1))


def _window_max(text: str) -> str:
    v = ints(text)
    n, k, a = v[0], v[1], v[2:]
    return " ".join(str(max(a[i : i + k])) for i in range(n - k + 1))


def _gen_window(rng: random.Random, size: Size) -> str:
    n = _pick(rng, size, (1, 7), (200, 800), (1,))
    a = [rng.randint(0, 5 if size != "large" else 50) for _ in range(n)]
    return lines(f"{n} {rng.randint(1, n)}", a)


def _longest_unique(s: str) -> int:
    best, lo = 0, 0
    last: dict[str, int] = {}
    for i, c in enumerate(s):
        if last.get(c, -1) >= lo:
            lo = last[c] + 1
        last[c] = i
        best = max(best, i - lo + 1)
    return best


_RS_WIN = "let n = rd!(usize);\nlet k = rd!(usize);\nlet a: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"

WINDOWS = Family(
    key="windows",
    input_text="The first line contains n and k (1 <= k <= n <= 800); the second n integers "
    "(0 <= a_i <= 50).",
    gen=_gen_window,
    variants=(
        Variant("distinct", "Variety Window", 2,
                "For each window of k consecutive elements print its number of distinct values.",
                "Print n-k+1 integers on one line.", _window_distinct,
                _RS_WIN + "let mut out = Vec::new();\nfor i in 0..=n - k {\n    let mut w = a[i..i + k].to_vec();\n"
                "    w.sort();\n    w.dedup();\n    out.push(w.len().to_string());\n}\nwriteln!(o, \"{}\", out.join(\" \")).unwrap();"),
        Variant("max", "Window Peak", 2,
                "For each window of k consecutive elements print its maximum.",
                "Print n-k+1 integers on one line.", _window_max,
                _RS_WIN + "let mut out = Vec::new();\nfor i in 0..=n - k {\n"
                "    out.push(a[i..i + k].iter().max().unwrap().to_string());\n}\nwriteln!(o, \"{}\", out.join(\" \")).unwrap();"),
        Variant("unique", "First Loner", 1,
                "Print the 1-based index of the first letter of s that occurs exactly once, or -1.",
                "Print one integer.",
                lambda t: str(_first_unique(t.strip())),
                "let s: Vec<u8> = rd!(String).into_bytes();\nlet mut cnt = [0usize; 26];\n"
                "for &c in &s { cnt[(c - b'a') as usize] += 1; }\nlet mut r: i64 = -1;\n"
                "for (i, &c) in s.iter().enumerate() { if cnt[(c - b'a') as usize] == 1 { r = i as i64 + 1; break; } }\n"
                'writeln!(o, "{}", r).unwrap();',
                gen=lambda rng, size: lines("".join(rng.choice("abcd" if size != "large" else "abcdefghijklmnopqrstuvwxyz")
                                                    for _ in range(_pick(rng, size, (1, 8), (100, 3000), (1, 2))))),
                input_text="One line with a string s of lowercase letters (1 <= |s| <= 3000)."),
        Variant("nodup", "Fresh Streak", 2,
                "Print the length of the longest substring of s without repeated letters.",
                "Print one integer.", lambda t: str(_longest_unique(t.strip())),
                "let s: Vec<u8> = rd!(String).into_bytes();\nlet mut last = [usize::MAX; 26];\n"
                "let (mut best, mut lo) = (0usize, 0usize);\nfor (i, &c) in s.iter().enumerate() {\n"
                "    let k = (c - b'a') as usize;\n    if last[k] != usize::MAX && last[k] >= lo { lo = last[k] + 1; }\n"
                "    last[k] = i;\n    best = best.max(i - lo + 1);\n}\nwriteln!(o, \"{}\", best).unwrap();",
                gen=lambda rng, size: lines("".join(rng.choice("abcde" if size != "large" else "abcdefghijklmnopqrstuvwxyz")
                                                    for _ in range(_pick(rng, size, (1, 8), (100, 3000), (1, 2))))),
                input_text="One line with a string s of lowercase letters (1 <= |s| <= 3000)."),
        Variant("twins", "Twin Tags", 2,
                "Print the number of pairs i < j with a_i = a_j.", "Print one integer.",
                lambda t: str(sum(c * (c - 1) // 2 for c in Counter(ints(t)[1:]).values())),
                "let n = rd!(usize);\nlet mut cnt = std::collections::HashMap::new();\nfor _ in 0..n { *cnt.entry(rd!(i64)).or_insert(0i64) += 1; }\n"
                "let total: i64 = cnt.values().map(|&c| c * (c - 1) / 2).sum();\nwriteln!(o, \"{}\", total).unwrap();",
                gen=lambda rng, size: lines(len(a := [rng.randint(1, 3) for _ in range(_pick(rng, size, (1, 6), (50000, 100000), (1,)))]), a),
                input_text="The first line contains n (1 <= n <= 100000); the second n integers "
                "(1 <= a_i <= 3)."),
    ),
)


def _first_unique(s: str) -> int:
    counts = Counter(s)
    return next((i + 1 for i, c in enumerate(s) if counts[c] == 1), -1)
