"""Expert solution (not used for normalization): the reference plus prompt hints against
known weak-model bugs, a static lint of the candidates that pass the public tests, and a vote
among them on perturbed inputs. It shows that there is room above the reference."""

import asyncio
import collections
import hashlib
import os
import random
import re
import tempfile

RUSTC = os.environ.get("RUSTC", "rustc")
FENCE = re.compile(r"```([a-zA-Z]*)[ \t]*\n(.*?)```", re.S)
PROMPT = """Solve the following competitive programming problem in Rust (edition 2021, standard
library only, no external crates). Think step by step first. Read the whole input from stdin
(the input can be large), use i64 to avoid overflow, consider edge cases, and only print the
answer. Give the complete program in one ```rust code block.

{description}"""
SLOTS = asyncio.Semaphore(2)


def extract(text):
    blocks = [c for lang, c in FENCE.findall(text) if lang in ("rust", "rs", "") and "fn main" in c]
    return blocks[-1] if blocks else None


async def run(binary, data):
    proc = await asyncio.create_subprocess_exec(binary, stdin=-1, stdout=-1, stderr=-3)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(data.encode()), 5)
    except TimeoutError:
        proc.kill()
        return None
    return out.decode(errors="replace").split() if proc.returncode == 0 else None


async def build(code, workdir):
    path = os.path.join(workdir, hashlib.sha256(code.encode()).hexdigest()[:16])
    with open(path + ".rs", "w") as fh:
        fh.write(code)
    async with SLOTS:
        proc = await asyncio.create_subprocess_exec(RUSTC, "--edition", "2021", "-O", path + ".rs",
                                                    "-o", path, stdout=-3, stderr=-3)
        await proc.wait()
    return path if proc.returncode == 0 else None


async def passes(binary, tests):
    for given, expected in tests:
        if await run(binary, given) != expected.split():
            return False
    return True


def scale_up(text, rng):
    """A bigger input in the shape of an example: repeat its numbers' magnitudes (crude)."""
    return re.sub(r"\d+", lambda m: str(int(m.group()) * rng.randint(1, 3)), text)


async def generate_solution(client, semaphore, problem):
    prompt = PROMPT.format(description=problem["description"])
    tests = list(zip(problem["public_tests"]["input"], problem["public_tests"]["output"],
                     strict=True))
    passing = {}
    with tempfile.TemporaryDirectory(dir=os.getcwd()) as workdir:
        for _ in range(3):
            async with semaphore:
                reply = await client.chat.completions.create(
                    model="m", n=8, temperature=0.8, messages=[{"role": "user", "content": prompt}])
            for choice in reply.choices:
                code = extract(choice.message.content or "")
                if not code or code in passing:
                    continue
                binary = await build(code, workdir)
                if binary and await passes(binary, tests):
                    passing[code] = binary
            if len(passing) >= 3:
                break
        if not passing:
            return ""
        # A static lint for a weak-model bug the public tests cannot see: a fixed stdin buffer.
        sound = {c: b for c, b in passing.items() if "[0u8; 256]" not in c and "i32" not in c}
        passing = sound or passing
        rng = random.Random(0)
        probes = [scale_up(i, rng) for i, _ in tests for _ in range(2)]
        votes = collections.Counter()
        signatures = {}
        for code, binary in passing.items():
            signatures[code] = tuple([str(await run(binary, p)) for p in probes])
            votes[signatures[code]] += 1
        best = votes.most_common(1)[0][0]
        return next(code for code, sig in signatures.items() if sig == best)
