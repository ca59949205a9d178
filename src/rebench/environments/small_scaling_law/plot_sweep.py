"""Plot a profile's sweep: held-out loss vs n_embd on the budget line (README figure).

    python -m rebench.environments.small_scaling_law.plot_sweep --profile cpu

Needs matplotlib (the `report` extra); writes sweep_<profile>.png beside this file.
"""

from __future__ import annotations

import argparse

from rebench.environments.small_scaling_law.sweep import load_sweep, sweep_path


def plot(profile: str) -> None:
    """Write sweep_<profile>.png from sweep_<profile>.json."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = sorted(load_sweep(profile), key=lambda p: p.n_embd)
    best = min(points, key=lambda p: p.loss)
    fig, ax = plt.subplots(figsize=(5, 3.4), dpi=120)
    ax.plot([p.n_embd for p in points], [p.loss for p in points], "o-")
    for p in points:
        ax.annotate(f"{p.max_iters} it", (p.n_embd, p.loss), textcoords="offset points",
                    xytext=(0, 6), ha="center", fontsize=7)
    ax.plot([best.n_embd], [best.loss], "r*", markersize=12, label=f"L* = {best.loss:.3f}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n_embd (max_iters fills the budget)")
    ax.set_ylabel("held-out loss (nats)")
    ax.set_title(f"small_scaling_law {profile}: loss on the budget line")
    ax.legend()
    fig.tight_layout()
    fig.savefig(sweep_path(profile).with_suffix(".png"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="cpu")
    plot(parser.parse_args().profile)


if __name__ == "__main__":
    main()
