# ruff: noqa: E501 - the Rust reference programs are data; their lines are kept whole.
"""Families on arrays, strings, digits and number theory."""

from __future__ import annotations

import itertools
import math
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

BIG = 10**9


def _array(rng: random.Random, size: Size, lo: int = -BIG, hi: int = BIG, min_n: int = 1) -> list[int]:
    if size == "small":
        return [rng.randint(max(lo, -9), min(hi, 9)) for _ in range(rng.randint(max(min_n, 2), 6))]
    if size == "edge":
        kind = rng.randrange(3)
        n = max(min_n, 1) if kind == 0 else rng.randint(max(min_n, 2), 5)
        if kind == 1:
            return [rng.choice((lo, hi))] * n
        return [rng.randint(lo, min(hi, lo + 5)) if kind == 2 else hi for _ in range(n)]
    return [rng.randint(lo, hi) for _ in range(rng.randint(200, 1000))]


def gen_array(rng: random.Random, size: Size) -> str:
    arr = _array(rng, size)
    return lines(len(arr), arr)


def _rs_read_vec(t: str = "i64") -> str:
    return f"let n = rd!(usize);\nlet a: Vec<{t}> = (0..n).map(|_| rd!({t})).collect();\n"


ARRAYS = Family(
    key="arrays",
    input_text="The first line contains n (1 <= n <= 1000). The second line contains n integers "
    "a_1..a_n (-10^9 <= a_i <= 10^9).",
    gen=gen_array,
    variants=(
        Variant("total", "Ledger Total", 1, "Given n integers, print their sum.",
                "Print one integer: the sum.",
                lambda t: str(sum(ints(t)[1:])),
                _rs_read_vec() + 'let s: i64 = a.iter().sum();\nwriteln!(o, "{}", s).unwrap();'),
        Variant("spread", "Temperature Spread", 1,
                "Given n integers, print the difference between the largest and the smallest.",
                "Print one integer: max - min.",
                lambda t: str(max(ints(t)[1:]) - min(ints(t)[1:])),
                _rs_read_vec() + "let mx = *a.iter().max().unwrap();\n"
                "let mn = *a.iter().min().unwrap();\nwriteln!(o, \"{}\", mx - mn).unwrap();"),
        Variant("distinct", "Distinct Badges", 1,
                "Given n integers, print how many different values occur among them.",
                "Print one integer: the number of distinct values.",
                lambda t: str(len(set(ints(t)[1:]))),
                _rs_read_vec() + "let mut b = a.clone();\nb.sort();\nb.dedup();\n"
                'writeln!(o, "{}", b.len()).unwrap();'),
        Variant("alternating", "Alternating Charges", 1,
                "Given n integers, compute a_1 - a_2 + a_3 - a_4 + ... (signs alternate, "
                "starting with plus).",
                "Print one integer: the alternating sum.",
                lambda t: str(sum(x if i % 2 == 0 else -x for i, x in enumerate(ints(t)[1:]))),
                _rs_read_vec() + "let mut s: i64 = 0;\nfor (i, x) in a.iter().enumerate() {\n"
                "    if i % 2 == 0 { s += x; } else { s -= x; }\n}\n"
                'writeln!(o, "{}", s).unwrap();'),
        Variant("ascents", "Climbing Days", 1,
                "Given n integers, count the positions i (2 <= i <= n) with a_i > a_{i-1}.",
                "Print one integer: the number of such positions.",
                lambda t: str(sum(1 for x, y in zip(ints(t)[1:], ints(t)[2:], strict=False) if y > x)),
                _rs_read_vec() + "let mut c = 0;\nfor i in 1..n {\n    if a[i] > a[i - 1] { c += 1; }\n}\n"
                'writeln!(o, "{}", c).unwrap();'),
    ),
)


def gen_word(rng: random.Random, size: Size) -> str:
    if size == "small":
        s = "".join(rng.choice("abcaeiou") for _ in range(rng.randint(1, 8)))
    elif size == "edge":
        s = rng.choice(["a", "z", "aaaa", "abba", "zzzzzzzy", "racecar"])
    else:
        alphabet = rng.choice(["ab", "abc", "abcdefghijklmnopqrstuvwxyz"])
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(500, 3000)))
    return lines(s)


def _longest_run(s: str) -> int:
    best = cur = 1
    for x, y in itertools.pairwise(s):
        cur = cur + 1 if x == y else 1
        best = max(best, cur)
    return best


def _rle(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        out.append(f"{s[i]}{j - i}")
        i = j
    return "".join(out)


_RS_WORD = "let s: Vec<u8> = rd!(String).into_bytes();\nlet n = s.len();\n"

STRINGS = Family(
    key="strings",
    input_text="One line with a string s of lowercase English letters (1 <= |s| <= 3000).",
    gen=gen_word,
    variants=(
        Variant("vowels", "Vowel Count", 1, "Count the vowels (a, e, i, o, u) in s.",
                "Print one integer.",
                lambda t: str(sum(c in "aeiou" for c in t.strip())),
                _RS_WORD + "let c = s.iter().filter(|&&ch| b\"aeiou\".contains(&ch)).count();\n"
                "let _ = n;\nwriteln!(o, \"{}\", c).unwrap();"),
        Variant("run", "Longest Streak", 1,
                "Print the length of the longest block of consecutive equal letters in s.",
                "Print one integer.",
                lambda t: str(_longest_run(t.strip())),
                _RS_WORD + "let mut best = 1;\nlet mut cur = 1;\nfor i in 1..n {\n"
                "    if s[i] == s[i - 1] { cur += 1; } else { cur = 1; }\n"
                "    if cur > best { best = cur; }\n}\nwriteln!(o, \"{}\", best).unwrap();"),
        Variant("palindrome", "Mirror Word", 1, "Decide whether s reads the same backwards.",
                "Print YES or NO.",
                lambda t: "YES" if t.strip() == t.strip()[::-1] else "NO",
                _RS_WORD + "let ok = (0..n / 2).all(|i| s[i] == s[n - 1 - i]);\n"
                'writeln!(o, "{}", if ok { "YES" } else { "NO" }).unwrap();'),
        Variant("mode", "Favourite Letter", 1,
                "Print the letter that occurs most often in s; on a tie print the "
                "alphabetically smallest one.",
                "Print one letter.",
                lambda t: min(Counter(t.strip()).items(), key=lambda kv: (-kv[1], kv[0]))[0],
                _RS_WORD + "let mut cnt = [0usize; 26];\nfor &ch in &s { cnt[(ch - b'a') as usize] += 1; }\n"
                "let _ = n;\nlet mut best = 0;\nfor c in 1..26 { if cnt[c] > cnt[best] { best = c; } }\n"
                "writeln!(o, \"{}\", (b'a' + best as u8) as char).unwrap();"),
        Variant("rle", "Run-Length Code", 2,
                "Encode s with run-length encoding: each maximal block of equal letters becomes "
                "the letter followed by the block length (for example aaabcc -> a3b1c2).",
                "Print the encoded string.",
                lambda t: _rle(t.strip()),
                _RS_WORD + "let mut out = String::new();\nlet mut i = 0;\nwhile i < n {\n"
                "    let mut j = i;\n    while j < n && s[j] == s[i] { j += 1; }\n"
                "    out.push(s[i] as char);\n    out.push_str(&(j - i).to_string());\n"
                "    i = j;\n}\nwriteln!(o, \"{}\", out).unwrap();"),
    ),
)


def gen_numbers(rng: random.Random, size: Size, hi: int = 10**18) -> str:
    if size == "small":
        xs = [rng.randint(0, 50) for _ in range(rng.randint(1, 4))]
    elif size == "edge":
        xs = [0, 1, hi, hi - 1][: rng.randint(1, 4)]
    else:
        xs = [rng.randint(0, hi) for _ in range(rng.randint(20, 200))]
    return lines(len(xs), *xs)


def _digital_root(n: int) -> int:
    return 0 if n == 0 else 1 + (n - 1) % 9


def _fact_zeros(n: int) -> int:
    z, p = 0, 5
    while p <= n:
        z += n // p
        p *= 5
    return z


def _per_line(fn: Callable[[int], object]) -> Oracle:
    def oracle(text: str) -> str:
        return "\n".join(str(fn(x)) for x in ints(text)[1:])

    return oracle


_RS_T = "let t = rd!(usize);\nfor _ in 0..t {\n    let n = rd!(u64);\n"

DIGITS = Family(
    key="digits",
    input_text="The first line contains t (1 <= t <= 200). Each of the next t lines contains "
    "an integer n (0 <= n <= 10^18).",
    gen=gen_numbers,
    variants=(
        Variant("digitsum", "Digit Sum", 1, "For each n print the sum of its decimal digits.",
                "Print t lines.", _per_line(lambda n: sum(map(int, str(n)))),
                _RS_T + "    let mut m = n;\n    let mut s = 0;\n"
                "    while m > 0 { s += m % 10; m /= 10; }\n    writeln!(o, \"{}\", s).unwrap();\n}"),
        Variant("root", "Digital Root", 1,
                "For each n repeatedly replace it by the sum of its digits until one digit "
                "remains; print that digit.",
                "Print t lines.", _per_line(_digital_root),
                _RS_T + "    let r = if n == 0 { 0 } else { 1 + (n - 1) % 9 };\n"
                "    writeln!(o, \"{}\", r).unwrap();\n}"),
        Variant("reverse", "Mirror Number", 1,
                "For each n print the number formed by its digits in reverse order, without "
                "leading zeros (0 stays 0).",
                "Print t lines.", _per_line(lambda n: int(str(n)[::-1])),
                _RS_T + "    let mut m = n;\n    let mut r: u64 = 0;\n"
                "    while m > 0 { r = r * 10 + m % 10; m /= 10; }\n"
                "    writeln!(o, \"{}\", r).unwrap();\n}"),
        Variant("zeros", "Factorial Zeros", 2,
                "For each n print the number of trailing zeros of n! (n factorial).",
                "Print t lines.", _per_line(_fact_zeros),
                _RS_T + "    let mut z: u64 = 0;\n    let mut m = n;\n"
                "    while m >= 5 { m /= 5; z += m; }\n    writeln!(o, \"{}\", z).unwrap();\n}"),
        Variant("bits", "Lit Bits", 1,
                "For each n print the number of ones in its binary representation.",
                "Print t lines.", _per_line(lambda n: bin(n).count("1")),
                _RS_T + "    writeln!(o, \"{}\", n.count_ones()).unwrap();\n}"),
    ),
)


def _gen_pos(rng: random.Random, size: Size) -> str:
    arr = _array(rng, size, 1, 10**18)
    return lines(len(arr), arr)


def _gen_shared_factor(rng: random.Random, size: Size) -> str:
    """Positive integers sharing a drawn factor: the gcd of independent draws is almost
    always 1, so every test of the gcd variant once printed 1 and a program that echoed
    the sample's output passed them all."""
    if size == "edge":
        return _gen_pos(rng, size)
    if size == "small":
        g = rng.randint(1, 9)
        arr = [g * rng.randint(1, 9) for _ in range(rng.randint(2, 6))]
    else:
        g = rng.randint(2, 10**6)
        arr = [g * rng.randint(1, 10**18 // g) for _ in range(rng.randint(200, 1000))]
    return lines(len(arr), arr)


def _gen_single(hi: int) -> Generator:
    def gen(rng: random.Random, size: Size) -> str:
        if size == "small":
            return lines(rng.randint(1, 60))
        if size == "edge":
            return lines(rng.choice([1, 2, hi]))
        return lines(rng.randint(hi // 2, hi))

    return gen


def _count_primes(n: int) -> int:
    sieve = bytearray([1]) * (n + 1)
    sieve[0:2] = b"\x00\x00"[: min(2, n + 1)]
    for i in range(2, math.isqrt(n) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(range(i * i, n + 1, i)))
    return sum(sieve)


def _divisors(n: int) -> int:
    c, i = 0, 1
    while i * i <= n:
        if n % i == 0:
            c += 1 if i * i == n else 2
        i += 1
    return c


def _gen_powmod(rng: random.Random, size: Size) -> str:
    hi = 12 if size == "small" else 10**18
    rows = [(rng.randint(0, hi), rng.randint(0, hi), rng.randint(1, hi)) for _ in
            range(1 if size == "edge" else rng.randint(1, 50))]
    if size == "edge":
        rows = [rng.choice([(0, 0, 1), (10**18, 10**18, 10**18 - 1), (2, 10, 1000)])]
    return lines(len(rows), *rows)


def _gen_lcm(rng: random.Random, size: Size) -> str:
    hi = 20 if size == "small" else 10**9
    rows = [(rng.randint(1, hi), rng.randint(1, hi)) for _ in range(rng.randint(1, 50))]
    if size == "edge":
        rows = [(10**9, 10**9 - 1), (1, 1)]
    return lines(len(rows), *rows)


def _powmod_all(text: str) -> str:
    v = ints(text)
    return "\n".join(str(pow(v[i], v[i + 1], v[i + 2])) for i in range(1, len(v), 3))


NUMBERS = Family(
    key="numtheory",
    input_text="The first line contains n (1 <= n <= 1000); the second line n integers "
    "1 <= a_i <= 10^18.",
    gen=_gen_pos,
    variants=(
        Variant("gcd", "Common Measure", 2, "Print the greatest common divisor of all a_i.",
                "Print one integer.", lambda t: str(math.gcd(*ints(t)[1:])),
                _rs_read_vec("u64") + "fn gcd(a: u64, b: u64) -> u64 { if b == 0 { a } else { gcd(b, a % b) } }\n"
                "let g = a.iter().fold(0u64, |g, &x| gcd(g, x));\nwriteln!(o, \"{}\", g).unwrap();",
                gen=_gen_shared_factor),
        Variant("primes", "Prime Census", 2, "Print how many primes are at most n.",
                "Print one integer.", lambda t: str(_count_primes(ints(t)[0])),
                "let n = rd!(usize);\nlet mut is = vec![true; n + 1];\nlet mut c = 0;\n"
                "for i in 2..=n {\n    if is[i] {\n        c += 1;\n        let mut j = i * i;\n"
                "        while j <= n { is[j] = false; j += i; }\n    }\n}\nwriteln!(o, \"{}\", c).unwrap();",
                gen=_gen_single(10**6),
                input_text="One integer n (1 <= n <= 10^6)."),
        Variant("divisors", "Divisor Count", 2, "Print the number of positive divisors of n.",
                "Print one integer.", lambda t: str(_divisors(ints(t)[0])),
                "let n = rd!(u64);\nlet mut c = 0;\nlet mut i: u64 = 1;\nwhile i * i <= n {\n"
                "    if n % i == 0 { c += if i * i == n { 1 } else { 2 }; }\n    i += 1;\n}\n"
                "writeln!(o, \"{}\", c).unwrap();",
                gen=_gen_single(10**12),
                input_text="One integer n (1 <= n <= 10^12)."),
        Variant("powmod", "Modular Tower", 2, "For each query print a^b mod m.",
                "Print one line per query.", _powmod_all,
                "let t = rd!(usize);\nfor _ in 0..t {\n    let (a, mut b, m) = (rd!(u128), rd!(u128), rd!(u128));\n"
                "    let mut base = a % m;\n    let mut r: u128 = 1 % m;\n"
                "    while b > 0 {\n        if b & 1 == 1 { r = r * base % m; }\n"
                "        base = base * base % m;\n        b >>= 1;\n    }\n"
                "    writeln!(o, \"{}\", r).unwrap();\n}",
                gen=_gen_powmod, input_text="The first line contains t (1 <= t <= 50). Each "
                "of the next t lines contains a, b, m (0 <= a, b <= 10^18, 1 <= m <= 10^18)."),
        Variant("lcm", "Shared Cycle", 2, "For each pair (a, b) print lcm(a, b).",
                "Print one line per pair.",
                lambda t: "\n".join(str(math.lcm(x, y)) for x, y in
                                    zip(ints(t)[1::2], ints(t)[2::2], strict=True)),
                "let t = rd!(usize);\nfn gcd(a: u64, b: u64) -> u64 { if b == 0 { a } else { gcd(b, a % b) } }\n"
                "for _ in 0..t {\n    let (a, b) = (rd!(u64), rd!(u64));\n"
                "    writeln!(o, \"{}\", a / gcd(a, b) * b).unwrap();\n}",
                gen=_gen_lcm, input_text="The first line contains t (1 <= t <= 50); each of "
                "the next t lines contains a and b (1 <= a, b <= 10^9)."),
    ),
)
