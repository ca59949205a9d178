# ruff: noqa: E501 - the Rust reference programs are data; their lines are kept whole.
"""Families on stacks and on graphs."""

from __future__ import annotations

import heapq
import random
from collections import deque

from rebench.environments.rust_codecontests_inference.problems.base import (
    Family,
    Size,
    Variant,
    ints,
    lines,
)
from rebench.environments.rust_codecontests_inference.problems.families_a import BIG, _array


def _next_greater(xs: list[int]) -> list[int]:
    out = [-1] * len(xs)
    stack: list[int] = []
    for i, x in enumerate(xs):
        while stack and xs[stack[-1]] < x:
            out[stack.pop()] = x
        stack.append(i)
    return out


def _histogram(xs: list[int]) -> int:
    best, stack = 0, list[tuple[int, int]]()
    for i, h in enumerate([*xs, 0]):
        start = i
        while stack and stack[-1][1] >= h:
            start, height = stack.pop()
            best = max(best, height * (i - start))
        stack.append((start, h))
    return best


def _balanced(s: str) -> bool:
    pairs, stack = {")": "(", "]": "[", "}": "{"}, []
    for c in s:
        if c in "([{":
            stack.append(c)
        elif not stack or stack.pop() != pairs[c]:
            return False
    return not stack


def _gen_brackets(rng: random.Random, size: Size) -> str:
    n = {"small": rng.randint(1, 8), "edge": 1, "large": rng.randint(500, 3000)}[size]
    if rng.random() < 0.5:  # build a balanced one, maybe break it
        s: list[str] = []
        stack: list[str] = []
        for _ in range(n):
            if stack and rng.random() < 0.5:
                s.append({"(": ")", "[": "]", "{": "}"}[stack.pop()])
            else:
                stack.append(rng.choice("([{"))
                s.append(stack[-1])
        s += [{"(": ")", "[": "]", "{": "}"}[c] for c in reversed(stack)]
        if rng.random() < 0.3 and len(s) > 1:
            s[rng.randrange(len(s))] = rng.choice(")]}")
        return lines("".join(s))
    return lines("".join(rng.choice("()[]{}") for _ in range(n)))


def _reduce_pairs(s: str) -> str:
    stack: list[str] = []
    for c in s:
        if stack and stack[-1] == c:
            stack.pop()
        else:
            stack.append(c)
    return "".join(stack) or "EMPTY"


def _gen_heights(rng: random.Random, size: Size) -> str:
    arr = _array(rng, size, 0, BIG)
    return lines(len(arr), arr)


STACKS = Family(
    key="stacks",
    input_text="The first line contains n (1 <= n <= 1000); the second n integers "
    "(0 <= a_i <= 10^9).",
    gen=_gen_heights,
    variants=(
        Variant("brackets", "Bracket Check", 2,
                "Decide whether the bracket sequence s of ()[]{} is balanced.",
                "Print YES or NO.", lambda t: "YES" if _balanced(t.strip()) else "NO",
                "let s = rd!(String);\nlet mut st: Vec<char> = Vec::new();\nlet mut ok = true;\n"
                "for c in s.chars() {\n    match c {\n        '(' | '[' | '{' => st.push(c),\n"
                "        _ => {\n            let want = match c { ')' => '(', ']' => '[', _ => '{' };\n"
                "            if st.pop() != Some(want) { ok = false; break; }\n        }\n    }\n}\n"
                "if !st.is_empty() { ok = false; }\nwriteln!(o, \"{}\", if ok { \"YES\" } else { \"NO\" }).unwrap();",
                gen=_gen_brackets,
                input_text="One line with a string s of the characters ()[]{} (1 <= |s| <= 6000)."),
        Variant("nextgreater", "Next Taller", 2,
                "For every i print the first a_j with j > i and a_j > a_i, or -1 if none.",
                "Print n integers on one line.",
                lambda t: " ".join(map(str, _next_greater(ints(t)[1:]))),
                "let n = rd!(usize);\nlet a: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"
                "let mut res = vec![-1i64; n];\nlet mut st: Vec<usize> = Vec::new();\nfor i in 0..n {\n"
                "    while let Some(&j) = st.last() {\n        if a[j] < a[i] { res[j] = a[i]; st.pop(); } else { break; }\n"
                "    }\n    st.push(i);\n}\nlet s: Vec<String> = res.iter().map(|x| x.to_string()).collect();\n"
                "writeln!(o, \"{}\", s.join(\" \")).unwrap();"),
        Variant("histogram", "Billboard", 3,
                "Bars of width 1 have heights a_1..a_n. Print the largest area of an axis-aligned "
                "rectangle inside the bars.", "Print one integer.",
                lambda t: str(_histogram(ints(t)[1:])),
                "let n = rd!(usize);\nlet mut h: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\nh.push(0);\n"
                "let mut st: Vec<(usize, i64)> = Vec::new();\nlet mut best: i64 = 0;\nfor i in 0..=n {\n"
                "    let mut start = i;\n    while let Some(&(s, hh)) = st.last() {\n"
                "        if hh >= h[i] {\n            st.pop();\n            best = best.max(hh * (i - s) as i64);\n"
                "            start = s;\n        } else { break; }\n    }\n    st.push((start, h[i]));\n}\n"
                "writeln!(o, \"{}\", best).unwrap();"),
        Variant("span", "Price Span", 2,
                "For every day i print the number of consecutive days ending at i (including i) "
                "with a value at most a_i.", "Print n integers on one line.",
                lambda t: " ".join(str(_span(ints(t)[1:], i)) for i in range(ints(t)[0])),
                "let n = rd!(usize);\nlet a: Vec<i64> = (0..n).map(|_| rd!(i64)).collect();\n"
                "let mut st: Vec<usize> = Vec::new();\nlet mut out = Vec::new();\nfor i in 0..n {\n"
                "    while let Some(&j) = st.last() { if a[j] <= a[i] { st.pop(); } else { break; } }\n"
                "    let span = match st.last() { Some(&j) => i - j, None => i + 1 };\n"
                "    out.push(span.to_string());\n    st.push(i);\n}\nwriteln!(o, \"{}\", out.join(\" \")).unwrap();"),
        Variant("reduce", "Pair Erasure", 2,
                "Repeatedly delete two adjacent equal letters from s while possible. Print the "
                "result, or EMPTY if nothing is left.", "Print one line.",
                lambda t: _reduce_pairs(t.strip()),
                "let s = rd!(String);\nlet mut st: Vec<char> = Vec::new();\nfor c in s.chars() {\n"
                "    if st.last() == Some(&c) { st.pop(); } else { st.push(c); }\n}\n"
                "let r: String = st.into_iter().collect();\n"
                "writeln!(o, \"{}\", if r.is_empty() { \"EMPTY\".to_string() } else { r }).unwrap();",
                gen=lambda rng, size: lines("".join(rng.choice("ab" if size != "large" else "abc")
                                                    for _ in range(1 if size == "edge" else rng.randint(2, 8) if size == "small" else rng.randint(500, 3000)))),
                input_text="One line with a string s of lowercase letters (1 <= |s| <= 3000)."),
    ),
)


def _span(xs: list[int], i: int) -> int:
    j = i
    while j >= 0 and xs[j] <= xs[i]:
        j -= 1
    return i - j


def _gen_graph(rng: random.Random, size: Size, weighted: bool = False) -> str:
    n = {"small": rng.randint(2, 6), "edge": rng.choice([1, 2]), "large": rng.randint(100, 500)}[size]
    m = 0 if size == "edge" and rng.random() < 0.5 else rng.randint(0, min(2 * n, n * (n - 1) // 2))
    edges = []
    for _ in range(m):
        u, v = rng.randint(1, n), rng.randint(1, n)
        if u == v:
            continue
        edges.append((u, v, rng.randint(1, 10**9)) if weighted else (u, v))
    return lines(f"{n} {len(edges)}", *edges)


def _adj(text: str, weighted: bool = False) -> tuple[int, list[list[tuple[int, int]]]]:
    v = ints(text)
    n, m = v[0], v[1]
    step = 3 if weighted else 2
    adj: list[list[tuple[int, int]]] = [[] for _ in range(n + 1)]
    for i in range(m):
        a, b = v[2 + step * i], v[3 + step * i]
        w = v[4 + step * i] if weighted else 1
        adj[a].append((b, w))
        adj[b].append((a, w))
    return n, adj


def _bfs(text: str) -> list[int]:
    n, adj = _adj(text)
    dist = [-1] * (n + 1)
    dist[1] = 0
    q = deque([1])
    while q:
        x = q.popleft()
        for y, _ in adj[x]:
            if dist[y] < 0:
                dist[y] = dist[x] + 1
                q.append(y)
    return dist


def _bipartite(text: str) -> bool:
    n, adj = _adj(text)
    color = [-1] * (n + 1)
    for s in range(1, n + 1):
        if color[s] >= 0:
            continue
        color[s] = 0
        q = deque([s])
        while q:
            x = q.popleft()
            for y, _ in adj[x]:
                if color[y] < 0:
                    color[y] = 1 - color[x]
                    q.append(y)
                elif color[y] == color[x]:
                    return False
    return True


def _dijkstra(text: str) -> int:
    n, adj = _adj(text, weighted=True)
    dist = {1: 0}
    heap = [(0, 1)]
    while heap:
        d, x = heapq.heappop(heap)
        if d > dist.get(x, d):
            continue
        for y, w in adj[x]:
            if d + w < dist.get(y, 1 << 62):
                dist[y] = d + w
                heapq.heappush(heap, (d + w, y))
    return dist.get(n, -1)


_RS_ADJ = """let n = rd!(usize);
let m = rd!(usize);
let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
for _ in 0..m {
    let (u, v) = (rd!(usize), rd!(usize));
    adj[u].push(v);
    adj[v].push(u);
}
"""
_RS_GBFS = """let mut dist = vec![-1i64; n + 1];
dist[1] = 0;
let mut q = std::collections::VecDeque::new();
q.push_back(1usize);
while let Some(x) = q.pop_front() {
    for &y in &adj[x] {
        if dist[y] < 0 { dist[y] = dist[x] + 1; q.push_back(y); }
    }
}
"""

GRAPHS = Family(
    key="graphs",
    input_text="The first line contains n and m (1 <= n <= 500, 0 <= m <= 1000); each of the "
    "next m lines an undirected edge u v (1 <= u, v <= n, u != v).",
    gen=_gen_graph,
    variants=(
        Variant("components", "Island Hopping", 2,
                "Print the number of connected components of the graph.", "Print one integer.",
                lambda t: str(_count_components(t)),
                _RS_ADJ + "let mut seen = vec![false; n + 1];\nlet mut c = 0;\nfor s in 1..=n {\n"
                "    if seen[s] { continue; }\n    c += 1;\n    seen[s] = true;\n    let mut st = vec![s];\n"
                "    while let Some(x) = st.pop() {\n        for &y in &adj[x] { if !seen[y] { seen[y] = true; st.push(y); } }\n"
                "    }\n}\nwriteln!(o, \"{}\", c).unwrap();"),
        Variant("hops", "Fewest Flights", 2,
                "Print the minimum number of edges on a path from vertex 1 to vertex n, or -1.",
                "Print one integer.", lambda t: str(_bfs(t)[ints(t)[0]]),
                _RS_ADJ + _RS_GBFS + 'writeln!(o, "{}", dist[n]).unwrap();'),
        Variant("bipartite", "Two Teams", 3,
                "Decide whether the vertices can be split into two groups so that every edge "
                "joins the two groups.", "Print YES or NO.",
                lambda t: "YES" if _bipartite(t) else "NO",
                _RS_ADJ + "let mut color = vec![-1i32; n + 1];\nlet mut ok = true;\nfor s in 1..=n {\n"
                "    if color[s] >= 0 { continue; }\n    color[s] = 0;\n    let mut st = vec![s];\n"
                "    while let Some(x) = st.pop() {\n        for &y in &adj[x] {\n"
                "            if color[y] < 0 { color[y] = 1 - color[x]; st.push(y); }\n"
                "            else if color[y] == color[x] { ok = false; }\n        }\n    }\n}\n"
                'writeln!(o, "{}", if ok { "YES" } else { "NO" }).unwrap();'),
        Variant("dijkstra", "Toll Roads", 3,
                "Each edge has a toll w. Print the minimum total toll from vertex 1 to vertex n, "
                "or -1 if n cannot be reached.", "Print one integer.",
                lambda t: str(_dijkstra(t)),
                "let n = rd!(usize);\nlet m = rd!(usize);\nlet mut adj: Vec<Vec<(usize, i64)>> = vec![Vec::new(); n + 1];\n"
                "for _ in 0..m {\n    let (u, v, w) = (rd!(usize), rd!(usize), rd!(i64));\n"
                "    adj[u].push((v, w));\n    adj[v].push((u, w));\n}\n"
                "let mut dist = vec![i64::MAX; n + 1];\ndist[1] = 0;\nlet mut heap = std::collections::BinaryHeap::new();\n"
                "heap.push(std::cmp::Reverse((0i64, 1usize)));\nwhile let Some(std::cmp::Reverse((d, x))) = heap.pop() {\n"
                "    if d > dist[x] { continue; }\n    for &(y, w) in &adj[x] {\n"
                "        if d + w < dist[y] { dist[y] = d + w; heap.push(std::cmp::Reverse((d + w, y))); }\n"
                "    }\n}\nwriteln!(o, \"{}\", if dist[n] == i64::MAX { -1 } else { dist[n] }).unwrap();",
                gen=lambda rng, size: _gen_graph(rng, size, weighted=True),
                input_text="The first line contains n and m (1 <= n <= 500, 0 <= m <= 1000); "
                "each of the next m lines an undirected edge u v w (u != v, 1 <= w <= 10^9)."),
        Variant("reach", "Within Reach", 2,
                "Print how many vertices other than 1 can be reached from vertex 1 using at most "
                "2 edges.", "Print one integer.",
                lambda t: str(sum(1 for d in _bfs(t)[2:] if 0 < d <= 2)),
                _RS_ADJ + _RS_GBFS + "let c = (2..=n).filter(|&v| dist[v] > 0 && dist[v] <= 2).count();\n"
                'writeln!(o, "{}", c).unwrap();'),
    ),
)


def _count_components(text: str) -> int:
    n, adj = _adj(text)
    seen = [False] * (n + 1)
    c = 0
    for s in range(1, n + 1):
        if not seen[s]:
            c += 1
            seen[s] = True
            st = [s]
            while st:
                x = st.pop()
                for y, _ in adj[x]:
                    if not seen[y]:
                        seen[y] = True
                        st.append(y)
    return c
