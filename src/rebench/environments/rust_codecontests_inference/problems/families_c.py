# ruff: noqa: E501 - the Rust reference programs are data; their lines are kept whole.
"""Families on grids and dynamic programming."""

from __future__ import annotations

import random
from collections import deque

from rebench.environments.rust_codecontests_inference.problems.base import (
    Family,
    Size,
    Variant,
    ints,
    lines,
)

MOD = 10**9 + 7


def _gen_grid(rng: random.Random, size: Size) -> str:
    h, w = {"small": (rng.randint(1, 4), rng.randint(1, 5)), "edge": rng.choice([(1, 1), (1, 6), (5, 1)]),
            "large": (rng.randint(20, 60), rng.randint(20, 60))}[size]
    p = rng.choice([0.3, 0.45, 0.6])
    rows = ["".join("#" if rng.random() < p else "." for _ in range(w)) for _ in range(h)]
    return lines(f"{h} {w}", *rows)


def _parse_grid(text: str) -> list[str]:
    parts = text.split()
    h = int(parts[0])
    return parts[2 : 2 + h]


def _components(g: list[str], ch: str) -> list[int]:
    h, w = len(g), len(g[0])
    seen = [[False] * w for _ in range(h)]
    sizes = []
    for i in range(h):
        for j in range(w):
            if g[i][j] == ch and not seen[i][j]:
                seen[i][j] = True
                q, n = deque([(i, j)]), 0
                while q:
                    x, y = q.popleft()
                    n += 1
                    for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                        a, b = x + dx, y + dy
                        if 0 <= a < h and 0 <= b < w and g[a][b] == ch and not seen[a][b]:
                            seen[a][b] = True
                            q.append((a, b))
                sizes.append(n)
    return sizes


def _grid_path(g: list[str]) -> int:
    h, w = len(g), len(g[0])
    if g[0][0] == "#" or g[h - 1][w - 1] == "#":
        return -1
    dist = {(0, 0): 0}
    q = deque([(0, 0)])
    while q:
        x, y = q.popleft()
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            a, b = x + dx, y + dy
            if 0 <= a < h and 0 <= b < w and g[a][b] == "." and (a, b) not in dist:
                dist[(a, b)] = dist[(x, y)] + 1
                q.append((a, b))
    return dist.get((h - 1, w - 1), -1)


def _enclosed(g: list[str]) -> int:
    h, w = len(g), len(g[0])
    seen: set[tuple[int, int]] = set()
    q = deque((i, j) for i in range(h) for j in range(w)
              if (i in (0, h - 1) or j in (0, w - 1)) and g[i][j] == ".")
    seen.update(q)
    while q:
        x, y = q.popleft()
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            a, b = x + dx, y + dy
            if 0 <= a < h and 0 <= b < w and g[a][b] == "." and (a, b) not in seen:
                seen.add((a, b))
                q.append((a, b))
    return sum(row.count(".") for row in g) - len(seen)


def _isolated(g: list[str]) -> int:
    h, w = len(g), len(g[0])
    return sum(1 for i in range(h) for j in range(w) if g[i][j] == "#" and not any(
        0 <= i + dx < h and 0 <= j + dy < w and g[i + dx][j + dy] == "#"
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))))


_RS_GRID = """let h = rd!(usize);
let w = rd!(usize);
let g: Vec<Vec<u8>> = (0..h).map(|_| rd!(String).into_bytes()).collect();
let dirs: [(i64, i64); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];
"""
_RS_FLOOD = """let mut seen = vec![vec![false; w]; h];
let mut sizes: Vec<usize> = Vec::new();
for i in 0..h {
    for j in 0..w {
        if g[i][j] != b'#' || seen[i][j] { continue; }
        seen[i][j] = true;
        let mut q = std::collections::VecDeque::new();
        q.push_back((i, j));
        let mut cnt = 0;
        while let Some((x, y)) = q.pop_front() {
            cnt += 1;
            for &(dx, dy) in dirs.iter() {
                let (a, b) = (x as i64 + dx, y as i64 + dy);
                if a < 0 || b < 0 || a >= h as i64 || b >= w as i64 { continue; }
                let (a, b) = (a as usize, b as usize);
                if g[a][b] == b'#' && !seen[a][b] { seen[a][b] = true; q.push_back((a, b)); }
            }
        }
        sizes.push(cnt);
    }
}
"""
_RS_BFS = """let mut dist = vec![vec![-1i64; w]; h];
let mut q = std::collections::VecDeque::new();
{seed}
while let Some((x, y)) = q.pop_front() {{
    for &(dx, dy) in dirs.iter() {{
        let (a, b) = (x as i64 + dx, y as i64 + dy);
        if a < 0 || b < 0 || a >= h as i64 || b >= w as i64 {{ continue; }}
        let (a, b) = (a as usize, b as usize);
        if g[a][b] == b'.' && dist[a][b] < 0 {{ dist[a][b] = dist[x][y] + 1; q.push_back((a, b)); }}
    }}
}}
"""

GRIDS = Family(
    key="grids",
    input_text="The first line contains h and w (1 <= h, w <= 60), then h lines of w characters, "
    "each '.' (free) or '#' (rock).",
    gen=_gen_grid,
    variants=(
        Variant("islands", "Rock Islands", 2,
                "Count the groups of '#' cells connected through shared sides.",
                "Print one integer.", lambda t: str(len(_components(_parse_grid(t), "#"))),
                _RS_GRID + _RS_FLOOD + 'writeln!(o, "{}", sizes.len()).unwrap();'),
        Variant("largest", "Biggest Boulder", 2,
                "Print the number of cells of the largest group of '#' cells connected through "
                "shared sides, or 0 if there is no '#'.",
                "Print one integer.", lambda t: str(max(_components(_parse_grid(t), "#"), default=0)),
                _RS_GRID + _RS_FLOOD + 'writeln!(o, "{}", sizes.iter().max().copied().unwrap_or(0)).unwrap();'),
        Variant("path", "Cave Walk", 3,
                "Moving between side-adjacent free cells, print the minimum number of moves from "
                "the top-left to the bottom-right cell, or -1 if impossible (also if either is rock).",
                "Print one integer.", lambda t: str(_grid_path(_parse_grid(t))),
                _RS_GRID + _RS_BFS.format(seed="if g[0][0] == b'.' { dist[0][0] = 0; q.push_back((0usize, 0usize)); }")
                + "let d = if g[h - 1][w - 1] == b'.' { dist[h - 1][w - 1] } else { -1 };\n"
                'writeln!(o, "{}", d).unwrap();'),
        Variant("isolated", "Lonely Rocks", 1,
                "Count the '#' cells none of whose side-neighbours is '#'.",
                "Print one integer.", lambda t: str(_isolated(_parse_grid(t))),
                _RS_GRID + "let mut c = 0;\nfor i in 0..h {\n    for j in 0..w {\n"
                "        if g[i][j] != b'#' { continue; }\n        let mut alone = true;\n"
                "        for &(dx, dy) in dirs.iter() {\n            let (a, b) = (i as i64 + dx, j as i64 + dy);\n"
                "            if a >= 0 && b >= 0 && a < h as i64 && b < w as i64 && g[a as usize][b as usize] == b'#' { alone = false; }\n"
                "        }\n        if alone { c += 1; }\n    }\n}\nwriteln!(o, \"{}\", c).unwrap();"),
        Variant("enclosed", "Sealed Pockets", 3,
                "Count the free cells from which the border of the grid cannot be reached by "
                "moving between side-adjacent free cells (free border cells are not sealed).",
                "Print one integer.", lambda t: str(_enclosed(_parse_grid(t))),
                _RS_GRID + _RS_BFS.format(seed="for i in 0..h { for j in 0..w {\n"
                "    if (i == 0 || j == 0 || i == h - 1 || j == w - 1) && g[i][j] == b'.' { dist[i][j] = 0; q.push_back((i, j)); }\n} }")
                + "let mut c = 0;\nfor i in 0..h { for j in 0..w { if g[i][j] == b'.' && dist[i][j] < 0 { c += 1; } } }\n"
                'writeln!(o, "{}", c).unwrap();'),
    ),
)


def _lis(xs: list[int]) -> int:
    import bisect

    tails: list[int] = []
    for x in xs:
        i = bisect.bisect_left(tails, x)
        tails[i : i + 1] = [x]
    return len(tails)


def _lcs(a: str, b: str) -> int:
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b):
            cur.append(prev[j] + 1 if ca == cb else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def _edit(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _gen_two_words(rng: random.Random, size: Size) -> str:
    n = {"small": (1, 6), "edge": (1, 1), "large": (100, 400)}[size]
    alpha = "ab" if size != "large" else rng.choice(["abc", "abcdefgh"])
    words = ["".join(rng.choice(alpha) for _ in range(rng.randint(*n))) for _ in range(2)]
    return lines(*words)


def _gen_coins(rng: random.Random, size: Size) -> str:
    k = rng.randint(1, 4 if size != "large" else 10)
    coins = sorted({rng.randint(2 if size == "edge" else 1, 12 if size == "small" else 60) for _ in range(k)})
    x = rng.randint(0, 20) if size == "small" else (1 if size == "edge" else rng.randint(100, 10000))
    return lines(f"{len(coins)} {x}", coins)


def _coin_ways(text: str) -> int:
    v = ints(text)
    k, x, coins = v[0], v[1], v[2 : 2 + v[0]]
    ways = [1] + [0] * x
    for c in coins:
        for s in range(c, x + 1):
            ways[s] = (ways[s] + ways[s - c]) % MOD
    del k
    return ways[x]


def _coin_min(text: str) -> int:
    v = ints(text)
    x, coins = v[1], v[2 : 2 + v[0]]
    inf = 10**9
    best = [0] + [inf] * x
    for s in range(1, x + 1):
        for c in coins:
            if c <= s and best[s - c] + 1 < best[s]:
                best[s] = best[s - c] + 1
    return -1 if best[x] >= inf else best[x]


_RS_2W = "let a: Vec<u8> = rd!(String).into_bytes();\nlet b: Vec<u8> = rd!(String).into_bytes();\n" \
         "let (n, m) = (a.len(), b.len());\n"
_RS_COINS = "let k = rd!(usize);\nlet x = rd!(usize);\nlet coins: Vec<usize> = (0..k).map(|_| rd!(usize)).collect();\n"

DP = Family(
    key="dp",
    input_text="Two lines, each with a string of lowercase letters (length 1 to 400).",
    gen=_gen_two_words,
    variants=(
        Variant("lis", "Rising Subsequence", 3,
                "Print the length of the longest strictly increasing subsequence of a.",
                "Print one integer.", lambda t: str(_lis(ints(t)[1:])),
                "let n = rd!(usize);\nlet mut tails: Vec<i64> = Vec::new();\nfor _ in 0..n {\n"
                "    let x = rd!(i64);\n    let pos = tails.partition_point(|&t| t < x);\n"
                "    if pos == tails.len() { tails.push(x); } else { tails[pos] = x; }\n}\n"
                'writeln!(o, "{}", tails.len()).unwrap();',
                gen=lambda rng, size: lines(len(a := [rng.randint(-50, 50) for _ in range(
                    {"small": rng.randint(1, 7), "edge": 1, "large": rng.randint(300, 1000)}[size])]), a),
                input_text="The first line contains n (1 <= n <= 1000), the second n integers "
                "(|a_i| <= 50)."),
        Variant("lcs", "Shared Thread", 3,
                "Print the length of the longest common subsequence of the two strings.",
                "Print one integer.", lambda t: str(_lcs(*t.split())),
                _RS_2W + "let mut dp = vec![vec![0usize; m + 1]; n + 1];\nfor i in 1..=n {\n"
                "    for j in 1..=m {\n        dp[i][j] = if a[i - 1] == b[j - 1] { dp[i - 1][j - 1] + 1 }"
                " else { dp[i - 1][j].max(dp[i][j - 1]) };\n    }\n}\nwriteln!(o, \"{}\", dp[n][m]).unwrap();"),
        Variant("edit", "Typo Distance", 3,
                "Print the minimum number of single-letter insertions, deletions and "
                "substitutions that turn the first string into the second.",
                "Print one integer.", lambda t: str(_edit(*t.split())),
                _RS_2W + "let mut dp = vec![vec![0usize; m + 1]; n + 1];\nfor i in 0..=n { dp[i][0] = i; }\n"
                "for j in 0..=m { dp[0][j] = j; }\nfor i in 1..=n {\n    for j in 1..=m {\n"
                "        let sub = dp[i - 1][j - 1] + if a[i - 1] == b[j - 1] { 0 } else { 1 };\n"
                "        dp[i][j] = sub.min(dp[i - 1][j] + 1).min(dp[i][j - 1] + 1);\n    }\n}\n"
                'writeln!(o, "{}", dp[n][m]).unwrap();'),
        Variant("coinways", "Change Combinations", 3,
                "Print the number of ways to pay x with the given coin values (unlimited supply, "
                "order does not matter), modulo 1000000007.",
                "Print one integer.", lambda t: str(_coin_ways(t)),
                _RS_COINS + "let mut ways = vec![0u64; x + 1];\nways[0] = 1;\nfor &c in &coins {\n"
                "    for s in c..=x { ways[s] = (ways[s] + ways[s - c]) % 1_000_000_007; }\n}\n"
                'writeln!(o, "{}", ways[x]).unwrap();',
                gen=_gen_coins, input_text="The first line contains k and x (1 <= k <= 10, "
                "0 <= x <= 10000); the second k distinct coin values (1 to 60)."),
        Variant("coinmin", "Fewest Coins", 3,
                "Print the minimum number of coins (unlimited supply) that sum to exactly x, or "
                "-1 if impossible.",
                "Print one integer.", lambda t: str(_coin_min(t)),
                _RS_COINS + "let inf = i64::MAX / 2;\nlet mut best = vec![inf; x + 1];\nbest[0] = 0;\n"
                "for s in 1..=x {\n    for &c in &coins {\n"
                "        if c <= s && best[s - c] + 1 < best[s] { best[s] = best[s - c] + 1; }\n    }\n}\n"
                'writeln!(o, "{}", if best[x] >= inf { -1 } else { best[x] }).unwrap();',
                gen=_gen_coins, input_text="The first line contains k and x (1 <= k <= 10, "
                "0 <= x <= 10000); the second k distinct coin values (1 to 60)."),
    ),
)
