"""Reference: run small experiments through the `experiments` service, fit
L(n, T) = E + A * n**-alpha + B * T**-beta (n = n_embd, T = max_iters) by least squares over
a grid of exponents, and answer the (n, T) on the budget line with the lowest predicted loss.
Runs inside the sandbox: stdlib and numpy only. The environment's prepare runs `plan` too
(with its own trainer for the experiments) to measure the reference's score on the setting
it drew."""

import json
import subprocess

import numpy as np


def service_experiment(n_embd, max_iters):
    out = subprocess.run(
        ["rebench-service", "experiments", json.dumps({"n_embd": n_embd, "max_iters": max_iters})],
        capture_output=True, text=True, check=True).stdout
    reply = json.loads(out)
    if not reply.get("ok"):
        raise SystemExit(f"experiment refused: {reply}")
    return reply["val_loss"]


def fit(points):
    n, t, loss = (np.array(c, dtype=float) for c in zip(*points, strict=True))
    best = None
    for alpha in np.linspace(0.05, 1.5, 30):
        for beta in np.linspace(0.05, 1.5, 30):
            design = np.stack([np.ones_like(n), n ** -alpha, t ** -beta], axis=1)
            coef, *_ = np.linalg.lstsq(design, loss, rcond=None)
            if coef[1] < 0 or coef[2] < 0:
                continue  # loss must fall with width and with steps
            err = float(np.sum((design @ coef - loss) ** 2))
            if best is None or err < best[0]:
                best = (err, alpha, beta, coef)
    _, alpha, beta, (e, a, b) = best
    return lambda n_, t_: e + a * n_ ** -alpha + b * t_ ** -beta


def plan(recipe, experiment):
    """The answer for `recipe` (recipe.json's fields) and the experiments it ran, each
    through `experiment(n_embd, max_iters) -> validation loss`."""
    flops_per_iter = recipe["n_layer"] * 12 * 6 * recipe["block_size"] * recipe["batch_size"]
    head, low, high = recipe["head_size"], recipe["min_n_embd"], recipe["max_n_embd"]

    def iters_for(n_embd, flops):
        return int(flops // (flops_per_iter * n_embd * n_embd))

    cap = recipe["experiment_flops_cap"]
    # Widths spread over the lower part of the range (1x to 4x the smallest), each at the
    # full cap and at a half and a quarter of it: the fit sees both how loss falls with
    # width and how it falls with steps.
    widths = sorted({max(low, head * round(low * f / head)) for f in (1, 1.5, 2, 3, 4)})
    points = []
    for n_embd in widths:
        for share in (1.0, 0.5, 0.25):
            iters = iters_for(n_embd, cap * share)
            if iters >= 2:
                points.append((n_embd, iters, experiment(n_embd, iters)))
    predict = fit(points)
    target = recipe["target_flops"]
    candidates = [(predict(n, iters_for(n, target)), n) for n in
                  range(low, min(high, 4 * widths[-1]) + 1, head) if iters_for(n, target) >= 1]
    loss, n_embd = min(candidates)
    answer = {"loss_prediction": round(float(loss), 4), "max_iters": iters_for(n_embd, target),
              "n_embd": n_embd}
    return answer, points


def main():
    with open("recipe.json") as recipe_file:
        recipe = json.load(recipe_file)
    answer, points = plan(recipe, service_experiment)
    with open("answer.json", "w") as handle:
        json.dump(answer, handle)
    print(json.dumps({"experiments": points, "answer": answer}))


if __name__ == "__main__":
    main()
