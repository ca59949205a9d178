# ruff: noqa: E501 - the Rust reference programs are data; their lines are kept whole.
"""Families on simulation, greedy choices and number bases."""

from __future__ import annotations

import random

from rebench.environments.rust_codecontests_inference.problems.base import (
    Family,
    Size,
    Variant,
    ints,
    lines,
)

MOD = 10**9 + 7


def _pick(rng: random.Random, size: Size, small: tuple[int, int], large: tuple[int, int],
          edge: tuple[int, ...]) -> int:
    if size == "small":
        return rng.randint(*small)
    if size == "edge":
        return rng.choice(edge)
    return rng.randint(*large)


def _collatz(n: int) -> int:
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def _josephus(n: int, k: int) -> int:
    r = 0
    for i in range(2, n + 1):
        r = (r + k) % i
    return r + 1


def _robot(s: str) -> str:
    x = s.count("R") - s.count("L")
    y = s.count("U") - s.count("D")
    return f"{x} {y}"


def _overdrawn(text: str) -> int:
    bal, c = 0, 0
    for x in ints(text)[1:]:
        was = bal < 0
        bal += x
        c += bal < 0 and not was
    return c


def _clock(s: int) -> str:
    d, r = divmod(s, 86400)
    return f"{d} {r // 3600:02d}:{r % 3600 // 60:02d}:{r % 60:02d}"


SIMULATION = Family(
    key="simulation",
    input_text="One line with a string of moves over U, D, L, R (1 <= length <= 5000).",
    gen=lambda rng, size: lines("".join(rng.choice("UDLR") for _ in range(
        _pick(rng, size, (1, 8), (1000, 5000), (1,))))),
    variants=(
        Variant("robot", "Lost Rover", 1,
                "A rover starts at (0, 0); U adds 1 to y, D subtracts 1 from y, R adds 1 to x "
                "and L subtracts 1 from x. Print its final position.",
                "Print x and y separated by a space.", lambda t: _robot(t.strip()),
                "let s = rd!(String);\nlet (mut x, mut y) = (0i64, 0i64);\nfor c in s.chars() {\n"
                "    match c { 'U' => y += 1, 'D' => y -= 1, 'R' => x += 1, _ => x -= 1 }\n}\n"
                'writeln!(o, "{} {}", x, y).unwrap();'),
        Variant("josephus", "Circle Game", 2,
                "n people stand in a circle numbered 1..n. Starting from person 1, count k people "
                "(the first counted is person 1) and remove the k-th; continue counting from the "
                "next person. Print the number of the last person left.",
                "Print one integer.", lambda t: str(_josephus(*ints(t))),
                "let n = rd!(usize);\nlet k = rd!(usize);\nlet mut r = 0usize;\n"
                "for i in 2..=n { r = (r + k) % i; }\nwriteln!(o, \"{}\", r + 1).unwrap();",
                gen=lambda rng, size: lines(f"{_pick(rng, size, (1, 8), (1000, 100000), (1, 2))} "
                                            f"{_pick(rng, size, (1, 5), (1, 10**9), (1, 10**9))}"),
                input_text="One line with n and k (1 <= n <= 100000, 1 <= k <= 10^9)."),
        Variant("collatz", "Hailstone Steps", 2,
                "For each n, apply n -> n/2 (n even) or n -> 3n+1 (n odd) until n = 1 and print "
                "the number of steps.", "Print t lines.",
                lambda t: "\n".join(str(_collatz(x)) for x in ints(t)[1:]),
                "let t = rd!(usize);\nfor _ in 0..t {\n    let mut n = rd!(u64);\n    let mut s = 0;\n"
                "    while n != 1 { n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 }; s += 1; }\n"
                '    writeln!(o, "{}", s).unwrap();\n}',
                gen=lambda rng, size: lines(len(xs := [_pick(rng, size, (1, 30), (1, 10**6), (1, 837799, 999999))
                                                       for _ in range(1 if size == "edge" else rng.randint(1, 200))]), *xs),
                input_text="The first line contains t (1 <= t <= 200); each of the next t lines "
                "an integer n (1 <= n <= 10^6)."),
        Variant("overdraft", "Overdraft Alerts", 2,
                "An account starts at 0 and receives n signed transactions in order. Print how "
                "many times the balance goes from non-negative to negative.",
                "Print one integer.", lambda t: str(_overdrawn(t)),
                "let n = rd!(usize);\nlet (mut bal, mut c) = (0i64, 0);\nfor _ in 0..n {\n"
                "    let was = bal < 0;\n    bal += rd!(i64);\n    if bal < 0 && !was { c += 1; }\n}\n"
                'writeln!(o, "{}", c).unwrap();',
                gen=lambda rng, size: lines(len(xs := [rng.randint(-10**9, 10**9) for _ in range(
                    _pick(rng, size, (1, 6), (200, 1000), (1,)))]), xs),
                input_text="The first line contains n (1 <= n <= 1000); the second n integers "
                "(|x| <= 10^9)."),
        Variant("clock", "Uptime", 1,
                "Given a number of seconds s, print it as days, hours, minutes and seconds.",
                "Print D HH:MM:SS, where D is the number of whole days and the rest is zero-padded.",
                lambda t: _clock(int(t)),
                "let s = rd!(u64);\nlet (d, r) = (s / 86400, s % 86400);\n"
                'writeln!(o, "{} {:02}:{:02}:{:02}", d, r / 3600, r % 3600 / 60, r % 60).unwrap();',
                gen=lambda rng, size: lines(_pick(rng, size, (0, 100000), (10**9, 10**12), (0, 86399, 86400))),
                input_text="One integer s (0 <= s <= 10^12)."),
    ),
)


def _gen_intervals(rng: random.Random, size: Size) -> str:
    n = _pick(rng, size, (1, 5), (200, 1000), (1, 2))
    hi = 20 if size != "large" else 10**9
    rows = []
    for _ in range(n):
        a = rng.randint(0, hi)
        rows.append((a, rng.randint(a, min(hi, a + hi // 4 + 1))))
    return lines(n, *rows)


def _max_disjoint(text: str) -> int:
    v = ints(text)
    iv = sorted(zip(v[1::2], v[2::2], strict=True), key=lambda p: p[1])
    c, end = 0, -1
    for a, b in iv:
        if a > end:
            c, end = c + 1, b
    return c


def _max_overlap(text: str) -> int:
    v = ints(text)
    ev = sorted([(a, 0) for a in v[1::2]] + [(b, 1) for b in v[2::2]])
    best = cur = 0
    for _, kind in ev:
        cur += 1 if kind == 0 else -1
        best = max(best, cur)
    return best


def _boats(text: str) -> int:
    v = ints(text)
    n, cap, w = v[0], v[1], sorted(v[2:])
    i, j, c = 0, n - 1, 0
    while i <= j:
        if i < j and w[i] + w[j] <= cap:
            i += 1
        j -= 1
        c += 1
    return c


def _jumps(xs: list[int]) -> int:
    n = len(xs)
    jumps, end, far = 0, 0, 0
    for i in range(n - 1):
        if i > far:
            return -1
        far = max(far, i + xs[i])
        if i == end:
            jumps += 1
            end = far
    return jumps if far >= n - 1 or n == 1 else -1


def _ropes(xs: list[int]) -> int:
    import heapq

    heapq.heapify(xs)
    total = 0
    while len(xs) > 1:
        s = heapq.heappop(xs) + heapq.heappop(xs)
        total += s
        heapq.heappush(xs, s)
    return total


_RS_IV = "let n = rd!(usize);\nlet mut iv: Vec<(i64, i64)> = (0..n).map(|_| (rd!(i64), rd!(i64))).collect();\n"

GREEDY = Family(
    key="greedy",
    input_text="The first line contains n (1 <= n <= 1000); each of the next n lines a closed "
    "interval a b (0 <= a <= b <= 10^9).",
    gen=_gen_intervals,
    variants=(
        Variant("disjoint", "Booking Desk", 2,
                "Print the maximum number of pairwise disjoint intervals you can choose (closed "
                "intervals sharing an endpoint overlap).", "Print one integer.",
                lambda t: str(_max_disjoint(t)),
                _RS_IV + "iv.sort_by_key(|p| p.1);\nlet (mut c, mut end) = (0, -1i64);\n"
                "for &(a, b) in &iv { if a > end { c += 1; end = b; } }\nwriteln!(o, \"{}\", c).unwrap();"),
        Variant("overlap", "Peak Load", 2,
                "Print the maximum number of intervals that contain a common point.",
                "Print one integer.", lambda t: str(_max_overlap(t)),
                _RS_IV + "let mut ev: Vec<(i64, i32)> = Vec::new();\n"
                "for &(a, b) in &iv { ev.push((a, 0)); ev.push((b, 1)); }\nev.sort();\n"
                "let (mut best, mut cur) = (0i32, 0i32);\nfor &(_, k) in &ev {\n"
                "    cur += if k == 0 { 1 } else { -1 };\n    best = best.max(cur);\n}\n"
                "iv.clear();\nwriteln!(o, \"{}\", best).unwrap();"),
        Variant("boats", "Ferry Trips", 2,
                "Each boat carries at most two people with total weight at most c. Print the "
                "minimum number of boats for everyone.", "Print one integer.",
                lambda t: str(_boats(t)),
                "let n = rd!(usize);\nlet c = rd!(i64);\nlet mut w: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"
                "w.sort();\nlet (mut i, mut j, mut k) = (0usize, n - 1, 0);\nloop {\n"
                "    if i < j && w[i] + w[j] <= c { i += 1; }\n    k += 1;\n"
                "    if j == 0 || j - 1 < i { break; }\n    j -= 1;\n}\nwriteln!(o, \"{}\", k).unwrap();",
                gen=lambda rng, size: lines(len(w := [rng.randint(1, 10**9) for _ in range(_pick(rng, size, (1, 6), (200, 1000), (1,)))]),
                                            max(w) + rng.randint(0, 10**9), w),
                input_text="The first line contains n and c (1 <= n <= 1000, max weight <= c <= "
                "2*10^9); the second n weights (1 <= w_i <= 10^9)."),
        Variant("jumps", "Stepping Stones", 3,
                "From stone i you may jump to any stone i+1..i+a_i. Print the minimum number of "
                "jumps from stone 1 to stone n, or -1 if impossible.", "Print one integer.",
                lambda t: str(_jumps(ints(t)[1:])),
                "let n = rd!(usize);\nlet a: Vec<usize> = (0..n).map(|_| rd!(usize)).collect();\n"
                "let mut dist = vec![-1i64; n];\ndist[0] = 0;\nlet mut far = 0usize;\nfor i in 0..n {\n"
                "    if dist[i] < 0 { continue; }\n    let reach = (i + a[i]).min(n - 1);\n"
                "    while far < reach { far += 1; if dist[far] < 0 { dist[far] = dist[i] + 1; } }\n}\n"
                'writeln!(o, "{}", dist[n - 1]).unwrap();',
                gen=lambda rng, size: lines(len(a := [rng.randint(0, 3) for _ in range(_pick(rng, size, (1, 7), (200, 1000), (1, 2)))]), a),
                input_text="The first line contains n (1 <= n <= 1000); the second n integers "
                "(0 <= a_i <= 3)."),
        Variant("ropes", "Rope Splicing", 3,
                "Joining two ropes of lengths x and y costs x + y and gives one rope of length "
                "x + y. Print the minimum total cost to join all ropes into one.",
                "Print one integer.", lambda t: str(_ropes(ints(t)[1:])),
                "let n = rd!(usize);\nlet mut h = std::collections::BinaryHeap::new();\n"
                "for _ in 0..n { h.push(std::cmp::Reverse(rd!(i64))); }\nlet mut total: i64 = 0;\n"
                "while h.len() > 1 {\n    let std::cmp::Reverse(a) = h.pop().unwrap();\n"
                "    let std::cmp::Reverse(b) = h.pop().unwrap();\n    total += a + b;\n"
                "    h.push(std::cmp::Reverse(a + b));\n}\nwriteln!(o, \"{}\", total).unwrap();",
                gen=lambda rng, size: lines(len(a := [rng.randint(1, 10**9 if size != "small" else 9) for _ in range(_pick(rng, size, (1, 6), (200, 1000), (1, 2)))]), a),
                input_text="The first line contains n (1 <= n <= 1000); the second n lengths "
                "(1 <= x <= 10^9)."),
    ),
)


def _to_base(n: int, b: int) -> str:
    digits = "0123456789ABCDEF"
    out = ""
    while True:
        out = digits[n % b] + out
        n //= b
        if n == 0:
            return out


_ROMAN = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
          (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def _roman(n: int) -> str:
    out = ""
    for v, s in _ROMAN:
        while n >= v:
            out, n = out + s, n - v
    return out


def _excel(n: int) -> str:
    out = ""
    while n > 0:
        n -= 1
        out = chr(65 + n % 26) + out
        n //= 26
    return out


def _gen_roman(rng: random.Random, size: Size) -> str:
    xs = [_pick(rng, size, (1, 30), (1, 3999), (1, 3999, 4, 9, 1994)) for _ in range(rng.randint(1, 5 if size != "large" else 100))]
    return lines(len(xs), *xs)


_RS_ROMAN = ('let vals = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), '
             '(50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")];\n')

BASES = Family(
    key="bases",
    input_text="The first line contains t (1 <= t <= 100); each of the next t lines contains n "
    "and b (0 <= n <= 10^18, 2 <= b <= 16).",
    gen=lambda rng, size: lines(len(rows := [(_pick(rng, size, (0, 40), (0, 10**18), (0, 10**18)), rng.randint(2, 16))
                                             for _ in range(rng.randint(1, 4 if size != "large" else 100))]), *rows),
    variants=(
        Variant("tobase", "Radix Printer", 1,
                "For each query print n written in base b, using digits 0-9 and A-F.",
                "Print t lines.",
                lambda t: "\n".join(_to_base(n, b) for n, b in zip(ints(t)[1::2], ints(t)[2::2], strict=True)),
                "let t = rd!(usize);\nlet digits = b\"0123456789ABCDEF\";\nfor _ in 0..t {\n"
                "    let (mut n, b) = (rd!(u64), rd!(u64));\n    let mut s: Vec<u8> = Vec::new();\n"
                "    loop { s.push(digits[(n % b) as usize]); n /= b; if n == 0 { break; } }\n"
                "    s.reverse();\n    writeln!(o, \"{}\", String::from_utf8(s).unwrap()).unwrap();\n}"),
        Variant("binmod", "Long Binary", 2,
                "Print the value of the binary string s modulo 1000000007.", "Print one integer.",
                lambda t: str(int(t.strip(), 2) % MOD),
                "let s = rd!(String);\nlet mut r: u64 = 0;\nfor c in s.bytes() { r = (r * 2 + (c - b'0') as u64) % 1_000_000_007; }\n"
                'writeln!(o, "{}", r).unwrap();',
                gen=lambda rng, size: lines("1" + "".join(rng.choice("01") for _ in range(_pick(rng, size, (0, 10), (100, 5000), (0, 63))))),
                input_text="One line with a binary string s without leading zeros (1 <= |s| <= 5000)."),
        Variant("fromroman", "Roman Reader", 2,
                "For each Roman numeral (standard subtractive form) print its value.",
                "Print t lines.",
                lambda t: "\n".join(str(_from_roman(r)) for r in t.split()[1:]),
                "let t = rd!(usize);\nfor _ in 0..t {\n    let s: Vec<char> = rd!(String).chars().collect();\n"
                "    let v = |c: char| -> i64 { match c { 'I' => 1, 'V' => 5, 'X' => 10, 'L' => 50, 'C' => 100, 'D' => 500, _ => 1000 } };\n"
                "    let mut total = 0;\n    for i in 0..s.len() {\n"
                "        if i + 1 < s.len() && v(s[i]) < v(s[i + 1]) { total -= v(s[i]); } else { total += v(s[i]); }\n"
                "    }\n    writeln!(o, \"{}\", total).unwrap();\n}",
                gen=lambda rng, size: _romanize(_gen_roman(rng, size)),
                input_text="The first line contains t (1 <= t <= 100); each of the next t lines "
                "a Roman numeral of a value in 1..3999."),
        Variant("toroman", "Roman Carver", 2,
                "For each n print n as a Roman numeral in standard subtractive form.",
                "Print t lines.",
                lambda t: "\n".join(_roman(x) for x in ints(t)[1:]),
                "let t = rd!(usize);\n" + _RS_ROMAN + "for _ in 0..t {\n    let mut n = rd!(i64);\n"
                "    let mut s = String::new();\n    for &(v, r) in vals.iter() { while n >= v { s.push_str(r); n -= v; } }\n"
                '    writeln!(o, "{}", s).unwrap();\n}',
                gen=_gen_roman, input_text="The first line contains t (1 <= t <= 100); each of "
                "the next t lines an integer 1 <= n <= 3999."),
        Variant("excel", "Column Label", 2,
                "Spreadsheet columns are labelled A..Z, AA..AZ, BA.. and so on. For each n print "
                "the label of column n.", "Print t lines.",
                lambda t: "\n".join(_excel(x) for x in ints(t)[1:]),
                "let t = rd!(usize);\nfor _ in 0..t {\n    let mut n = rd!(u64);\n    let mut s: Vec<u8> = Vec::new();\n"
                "    while n > 0 { n -= 1; s.push(b'A' + (n % 26) as u8); n /= 26; }\n    s.reverse();\n"
                '    writeln!(o, "{}", String::from_utf8(s).unwrap()).unwrap();\n}',
                gen=lambda rng, size: lines(len(xs := [_pick(rng, size, (1, 60), (1, 10**12), (1, 26, 27, 702, 703))
                                                       for _ in range(rng.randint(1, 5 if size != "large" else 100))]), *xs),
                input_text="The first line contains t (1 <= t <= 100); each of the next t lines "
                "an integer 1 <= n <= 10^12."),
    ),
)


def _from_roman(s: str) -> int:
    v = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    return sum(-v[c] if i + 1 < len(s) and v[c] < v[s[i + 1]] else v[c] for i, c in enumerate(s))


def _romanize(text: str) -> str:
    values = ints(text)[1:]
    return lines(len(values), *[_roman(x) for x in values])
