"""``perceptron-oracle experiment``: the papers' experiments as commands.

Each experiment prints its table and its reproduction checks (the papers' qualitative
findings, measured on this run), writes ``OUT/<name>.csv`` and draws ``OUT/<name>.png`` with
matplotlib when it is installed.  Its independent runs are tasks for :mod:`.engine`
(``--jobs``, ``--backend loky|dask``, ``--scheduler``), each carrying its own seeds, so the
numbers are the same whatever the number of jobs.  ``--quick`` runs a reduced size (seconds)
instead of the paper's.  EXPERIMENTS.md records the full-size results and the decisions.
"""

from __future__ import annotations

import argparse
import csv
import math
import pathlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..errors import OracleInputError
from ..interrupts import one_line
from ..usage import OneLineParser
from . import higher_order as ho
from . import khardon_wachman as kw
from . import pumma
from . import second_order as so
from .engine import Engine


@dataclass
class Output:
    title: str
    table: str
    header: list[str]
    rows: list[list[Any]]
    checks: list[tuple[str, bool | None]] = field(default_factory=list)
    draw: Callable[[Any], None] | None = None   # draws on a matplotlib Figure


# -- HO: Brotto, Gentile & Vitale (2007), section 4, Task 1 (Figure 2) ------------------------

def _ho_artificial(args: argparse.Namespace, engine: Engine) -> Output:

    if args.quick:
        sizes = dict(n=100, relevant=10, n_train=200, n_test=200)
        epochs = 5
    else:
        sizes, epochs = {}, 20
    noises = (0.0, 0.1)
    task_list = [(noise, label, p, c, args.seed, epochs, tuple(sorted(sizes.items())))
                 for noise in noises for label, p, c in ho.ALGORITHMS]
    curves = engine.map(_ho_task, task_list, "HO artificial")
    by_noise = {noise: [c for t, c in zip(task_list, curves) if t[0] == noise]
                for noise in noises}
    rows = []
    for noise, cs in by_noise.items():
        for c in cs:
            for e in range(epochs):
                rows.append([noise, c.label, c.p, str(c.c), e + 1, c.updates[e],
                             c.total_updates[e], c.test_error[e]])
    table = "\n\n".join(f"Artificial {noise:.1f} (running total of training updates, test "
                        f"error)\n{ho.table(cs)}" for noise, cs in by_noise.items())
    checks: list[tuple[str, bool | None]] = []
    for noise, cs in by_noise.items():
        final = {c.label: c.test_error[-1] for c in cs}
        for zero, positive in (("FO = HO_2(0)", "HO_2(0.4)"), ("HO_7(0)", "HO_7(0.4)")):
            checks.append((f"Artificial {noise:.1f}: {positive} ends with test error <= "
                           f"{zero} ({final[positive]:.3f} vs {final[zero]:.3f})",
                           final[positive] <= final[zero]))

    def draw(fig: Any) -> None:
        axes = fig.subplots(2, 2, sharex=True)
        for col, (noise, cs) in enumerate(by_noise.items()):
            for c in cs:
                epochs_axis = range(1, len(c.updates) + 1)
                axes[0][col].plot(epochs_axis, c.total_updates, marker=".", label=c.label)
                axes[1][col].plot(epochs_axis, c.test_error, marker=".", label=c.label)
            axes[0][col].set_title(f"Artificial {noise:.1f}")
            axes[0][col].set_ylabel("training updates (running total)")
            axes[1][col].set_ylabel("test error")
            axes[1][col].set_xlabel("epochs")
        axes[0][0].legend(fontsize=7)

    return Output("Brotto, Gentile & Vitale (2007), section 4, Task 1: Artificial 0.0 / 0.1 "
                  f"({'reduced size' if args.quick else 'paper size'}, seed {args.seed})",
                  table, ["noise", "algorithm", "p", "c", "epoch", "updates",
                          "total_updates", "test_error"], rows, checks, draw)


def _ho_task(noise: float, label: str, p: int, c: Fraction, seed: int, epochs: int,
             sizes: tuple[tuple[str, int], ...]) -> Any:
    return ho.curve(noise, label, p, c, seed=seed, epochs=epochs, **dict(sizes))


# -- SOP: Cesa-Bianchi, Conconi & Gentile (2005), the simulation table -----------------------

#: the slides' table: test mistakes, mean (std), data sets 1 and 2
SOP_PAPER = {"perceptron": ((30.20, 6.24), (29.80, 8.16)),
             "sop a=1": ((9.60, 2.94), (5.60, 2.80)),
             "sop a=10": ((10.60, 2.58), (3.20, 1.47)),
             "sop a=50": ((14.00, 4.36), (10.40, 6.05))}


def _sop_simulation(args: argparse.Namespace, engine: Engine) -> Output:

    sizes = (dict(n_train=900, n_test=300, n=20) if args.quick else {})
    repeats = 2 if args.quick else 5
    task_list = [(d, 1000 * d + r + 10**6 * args.seed, tuple(sorted(sizes.items())))
                 for d in (1, 2) for r in range(repeats)]
    outputs = engine.map(_sop_task, task_list, "SOP simulation")
    result = so.summarize({d: [o for t, o in zip(task_list, outputs) if t[0] == d]
                           for d in (1, 2)})
    rows = [[name, d, t[1], o[name]] for t, o in zip(task_list, outputs) for name in o
            for d in [t[0]]]
    lines = [so.format_table(result)]
    if not args.quick:
        lines.append("\nthe slides' table:\n" + "\n".join(
            f"{name:<14} " + " ".join(f"{m:>9.2f} ({s:4.2f})" for m, s in by)
            for name, by in SOP_PAPER.items()))
    checks: list[tuple[str, bool | None]] = [
        (f"data set {d}: SOP a={a} makes fewer test mistakes than the Perceptron "
         f"({result[f'sop a={a}'][d][0]:.2f} vs {result['perceptron'][d][0]:.2f})",
         result[f"sop a={a}"][d][0] < result["perceptron"][d][0])
        for d in (1, 2) for a in (1, 10, 50)]

    def draw(fig: Any) -> None:
        ax = fig.subplots()
        names = list(result)
        width = 0.8 / len(names)
        for i, name in enumerate(names):
            means = [result[name][d][0] for d in (1, 2)]
            stds = [result[name][d][1] for d in (1, 2)]
            ax.bar([d + (i - len(names) / 2 + 0.5) * width for d in (1, 2)], means, width,
                   yerr=stds, capsize=3, label=name)
        ax.set_xticks([1, 2], ["data set 1", "data set 2"])
        ax.set_ylabel("test mistakes (mean, std over repeats)")
        ax.legend(fontsize=8)

    return Output("Cesa-Bianchi, Conconi & Gentile (2005): the simulation (test mistakes, mean "
                  f"(std) over {repeats} repeats, {'reduced size' if args.quick else 'paper size'}"
                  f", seed {args.seed})", "\n".join(lines),
                  ["algorithm", "data_set", "data_seed", "test_mistakes"], rows, checks, draw)


def _sop_task(dataset: int, seed: int, sizes: tuple[tuple[str, int], ...]) -> dict[str, int]:
    kwargs: dict[str, Any] = dict(sizes)
    return so.one_repeat(dataset, seed, **kwargs)


# -- PUMMA: Ishibashi, Hatano & Takeda (2008), section 5.1 ------------------------------------

def _pumma_r_of_k(args: argparse.Namespace, engine: Engine) -> Output:

    algorithms: dict[str, tuple[str, ...]]
    rs: tuple[int, ...]
    if args.quick:
        sizes = dict(n_examples=100, n=20, k=6, max_epochs=100)
        rs, runs = (1, 3), 2
        algorithms = {"2": ("pumma", "romma+aug"), "2ln(n)": ("pumma", "alma+aug")}
    else:
        sizes = dict(n_examples=1000, n=100, k=16, max_epochs=300)
        rs, runs = (1, 4, 8), 10
        algorithms = {"2": ("pumma", "romma+aug"), "2ln(n)": ("pumma",)}
        if args.alma:
            algorithms = {"2": ("pumma", "romma+aug", "alma+aug"),
                          "2ln(n)": ("pumma", "alma+aug")}
    k = sizes["k"]
    task_list = [(p, r, i, name, 10**6 * args.seed, tuple(sorted(sizes.items())))
                 for p in algorithms for r in rs for i in range(runs) for name in algorithms[p]]
    outputs = engine.map(_pumma_task, task_list, "PUMMA r-of-k")
    table_rows: list[dict[str, Any]] = []
    for p in algorithms:
        for r in rs:
            got = [(t, o) for t, o in zip(task_list, outputs) if t[0] == p and t[1] == r]
            runs_by = {name: [o[0] for t, o in got if t[3] == name] for name in algorithms[p]}
            optimum = [o[1] for t, o in got if t[3] == algorithms[p][0]]
            table_rows.extend(pumma.summarize(p, r, k, runs_by, optimum))
    rows = [[row["p"], row["r"], row["bias"], row["algorithm"], row["updates"], row["epochs"],
             row["margin"], row["target_margin"], row["converged"]] for row in table_rows]
    by = {(row["p"], row["bias"], row["algorithm"]): row for row in table_rows}
    biases = sorted({row["bias"] for row in table_rows}, reverse=True)
    checks = _pumma_checks(by, biases)

    def draw(fig: Any) -> None:
        axes = fig.subplots(1, len(algorithms), squeeze=False)[0]
        for ax, p in zip(axes, algorithms):
            for name in algorithms[p]:
                pts = [(by[(p, b, name)]["bias"], by[(p, b, name)]["updates"]) for b in biases
                       if (p, b, name) in by]
                ax.plot([x for x, _ in pts], [u for _, u in pts], marker="o", label=name)
            ax.set_yscale("log")
            ax.set_xlabel("bias k - 2r + 1")
            ax.set_ylabel("updates to convergence (mean)")
            ax.set_title(f"p = {p}")
            ax.legend(fontsize=8)

    return Output("Ishibashi, Hatano & Takeda (2008), section 5.1: r-of-k, updates to "
                  f"convergence ({'reduced size' if args.quick else 'paper size'}, {runs} data "
                  f"sets per row, seed {args.seed})", pumma.format_table(table_rows),
                  ["p", "r", "bias", "algorithm", "updates", "epochs", "margin",
                   "target_margin", "converged"], rows, checks, draw)


def _pumma_checks(by: dict[tuple[str, Any, str], dict[str, Any]],
                  biases: list[Any]) -> list[tuple[str, bool | None]]:
    """Section 5.1's findings on this run (``by``: the summary row of each p, bias and
    algorithm; ``biases`` largest first): with the augmented bias, PUMMA needs fewer
    updates than ROMMA (p = 2) and than ALMA (p = 2 ln n), and its advantage is largest
    at the largest bias."""
    checks: list[tuple[str, bool | None]] = []
    for p, rival in (("2", "romma+aug"), ("2ln(n)", "alma+aug")):
        ratios = []
        for bias in biases:
            if (p, bias, rival) not in by:
                continue
            ours, theirs = by[(p, bias, "pumma")], by[(p, bias, rival)]
            note = "" if ours["converged"] and theirs["converged"] else " (a run did not converge)"
            checks.append((f"p={p}, bias {bias}: PUMMA needs fewer updates than {rival} "
                           f"({ours['updates']:.0f} vs {theirs['updates']:.0f}){note}",
                           ours["updates"] < theirs["updates"]))
            ratios.append(theirs["updates"] / max(ours["updates"], 1.0))
        if len(ratios) >= 2:
            checks.append((f"p={p}: the advantage is largest at the largest bias ({rival}/PUMMA "
                           f"update ratio {ratios[0]:.2f} at bias {biases[0]}, "
                           f"{ratios[-1]:.2f} at bias {biases[-1]})",
                           ratios[0] >= max(ratios)))
    return checks


def _pumma_task(p: str, r: int, i: int, algorithm: str, seed: int,
                sizes: tuple[tuple[str, int], ...]) -> Any:
    return pumma.one_run(p, r, i, algorithm, seed=seed, **dict(sizes))


# -- Khardon & Wachman (2007), section 3 ------------------------------------------------------

def _paper_table(text: str, keys: tuple[str, ...], columns: tuple[str, ...]) -> dict[Any, Any]:
    """A table of a paper laid out as the paper prints it: a header line (the key fields,
    then the columns, spaces in a column's name written as "_"), then one line per row.
    Returns nested dicts over the key fields (a number where the field reads as one), each
    leading to the tuple of the row's cells; a cell is the number written (an int where it
    is written as one) or, written "mean+-half", the pair (mean, half-width)."""
    def number(text: str) -> Any:
        return int(text) if text.isdigit() else float(text)

    def key(text: str) -> Any:
        return number(text) if text[0].isdigit() else text

    def cell(text: str) -> Any:
        mean, _, half = text.partition("+-")
        return (number(mean), number(half)) if half else number(mean)

    header, *lines = text.strip().splitlines()
    if header.split() != [*keys, *(c.replace(" ", "_") for c in columns)]:
        raise AssertionError(f"paper table header {header!r} is not {keys} + {columns}")
    out: dict[Any, Any] = {}
    for line in lines:
        words = line.split()
        node = out
        for word in words[:len(keys) - 1]:
            node = node.setdefault(key(word), {})
        node[key(words[len(keys) - 1])] = tuple(cell(w) for w in words[len(keys):])
    return out


#: Table 4 (f = 50, M = 0.05), best cross-validated accuracy (%): noise -> hypothesis ->
#: the six columns of SEARCH_COLUMNS
TABLE4: dict[float, dict[str, tuple[float, ...]]] = _paper_table("""
noise  hypothesis  nothing  tau   lam   alpha  tau_x_lam  tau_x_alpha
0.0    last        95.4     97    95.6  96.1   96.8       97
0.0    longest     95.4     96.6  95.6  95.9   97.3       96.8
0.0    voted       95.4     96.6  95.4  96.1   96.8       97
0.05   last        81.7     89.4  87    89.5   89.7       89.9
0.05   longest     86.6     89.7  87    89.3   89.9       89.9
0.05   voted       87.5     89.4  87    89.5   89.7       90.2
0.1    last        77.8     84.6  81.9  85.1   84.9       85.8
0.1    longest     77.2     84.9  81.9  85.1   84.6       85.5
0.1    voted       81.6     84.9  81.9  85.1   84.9       85.6
0.15   last        71.2     81.6  79.9  80.6   81.6       81.7
0.15   longest     72.9     80.7  79.9  79.2   80.7       81.7
0.15   voted       75.6     81.6  79.9  80.6   82.1       81.6
0.25   last        59.9     70.7  68.2  70.7   71.1       71.1
0.25   longest     65       70.7  68.2  70.1   70.4       70.6
0.25   voted       68       70.4  69.4  70.7   70.6       71.1
""", ("noise", "hypothesis"), kw.SEARCH_COLUMNS)
#: Table 3, the Wdbc row (the columns of SEARCH_COLUMNS): hypothesis -> accuracies (%)
TABLE3_WDBC: dict[str, tuple[float, ...]] = _paper_table("""
hypothesis  nothing  tau   lam   alpha  tau_x_lam  tau_x_alpha
last        92.4     93.2  92.8  93.3   93.9       92.6
longest     92.4     93.2  92.6  92.4   92.8       92.8
voted       92.3     92.0  93.2  92.4   93.2       92.4
""", ("hypothesis",), kw.SEARCH_COLUMNS)
#: Table 6, the Wdbc row (the columns of OPTIMISATION_COLUMNS): hypothesis ->
#: (mean accuracy %, half-width of its 95% T-interval) per column
TABLE6_WDBC: dict[str, tuple[tuple[float, float], ...]] = _paper_table("""
hypothesis nothing   tau       lam       alpha     tau_x_alpha tau_x_lam tau_->_alpha tau_->_lam
last       92.4+-2.9 93+-2.7   93.2+-2.5 91.6+-2.7 92.8+-2.8   93.2+-2.8 93+-2.7      93.5+-2.2
longest    92.4+-2.0 91.7+-2.5 92.1+-2.5 92.3+-2.3 93.2+-1.7   92.5+-2.1 92.6+-2.1    91.4+-2.9
voted      92.3+-2.3 92.3+-2.6 92.8+-2.7 91.7+-1.9 91.6+-2.2   92.4+-2.4 91.6+-2.6    92.8+-2.3
""", ("hypothesis",), kw.OPTIMISATION_COLUMNS)

QUICK_GRID = dict(taus=(Fraction(0), Fraction(1, 2), Fraction(2)),
                  lams=(Fraction(0), Fraction(1)), alphas=(None, 10))


def _kw_config(args: argparse.Namespace, columns: tuple[str, ...]) -> kw.Config:
    grid: dict[str, Any] = dict(QUICK_GRID) if args.quick else {}
    wanted = "".join(columns)
    if "tau" not in wanted:
        grid["taus"] = (Fraction(0),)
    if "lam" not in wanted:
        grid["lams"] = (Fraction(0),)
    if "alpha" not in wanted:
        grid["alphas"] = (None,)
    if args.quick:
        return kw.Config(folds=3, inner_folds=3, epochs=10, **grid)
    return kw.Config(**grid)


def _columns(args: argparse.Namespace, known: tuple[str, ...]) -> tuple[str, ...]:
    if args.columns is None:
        return known
    names = tuple(" ".join(c.replace("_", " ").split()) for c in args.columns.split(","))
    unknown = [n for n in names if n not in known]
    if unknown:
        raise OracleInputError(f"unknown --columns {', '.join(unknown)} (known: "
                               f"{', '.join(known)})")
    return tuple(c for c in known if c in names)


def _search_rows(table: dict[str, dict[str, tuple[float, Any]]], columns: tuple[str, ...],
                 paper: dict[str, tuple[float, ...]] | None, prefix: list[Any]
                 ) -> list[list[Any]]:
    rows = []
    for h in kw.HYPOTHESES:
        for c in columns:
            value, setting = table[h][c]
            ref = paper[h][kw.SEARCH_COLUMNS.index(c)] if paper else ""
            rows.append(prefix + [h, c, round(value, 6), kw.format_setting(setting), ref])
    return rows


def _search_text(table: dict[str, dict[str, tuple[float, Any]]], columns: tuple[str, ...],
                 paper: dict[str, tuple[float, ...]] | None, label: str) -> list[str]:
    lines = [f"{label:<18}" + "".join(f"{c:>13}" for c in columns)]
    for h in kw.HYPOTHESES:
        lines.append(f"  {h:<16}" + "".join(f"{table[h][c][0]:>13.1f}" for c in columns))
        if paper:
            lines.append(f"  {'(paper)':<16}" + "".join(
                f"{paper[h][kw.SEARCH_COLUMNS.index(c)]:>13.1f}" for c in columns))
    return lines


def _khardon_table4(args: argparse.Namespace, engine: Engine) -> Output:
    columns = _columns(args, kw.SEARCH_COLUMNS)
    config = _kw_config(args, columns)
    if args.noise:
        noises = tuple(args.noise)
        bad = [n for n in noises if not 0 <= n <= 0.5]
        if bad:
            raise OracleInputError(f"--noise must be in [0, 0.5], got {bad[0]}")
    else:
        noises = (0.0, 0.25) if args.quick else tuple(TABLE4)
    n_sets, n_examples = (1, 200) if args.quick else (2, 600)
    specs = {noise: [("artificial", 50, 0.05, noise, 100 * args.seed + 10 * j + d, n_examples)
                     for d in range(n_sets)]
             for j, noise in enumerate(sorted(set(noises) | set(TABLE4))) if noise in noises}
    task_list = kw.tasks([s for noise in noises for s in specs[noise]], config, args.seed)
    by_data = kw.collect(task_list, engine.map(kw.fold_task, task_list, "Khardon Table 4"))
    tables = {noise: kw.search_table(by_data, specs[noise], config) for noise in noises}
    paper: dict[float, Any] = {noise: TABLE4.get(noise) if not args.quick else None
                               for noise in noises}
    lines, rows = [], []
    for noise in noises:
        lines += _search_text(tables[noise], columns, paper[noise], f"N = {noise}")
        rows += _search_rows(tables[noise], columns, paper[noise], [noise])
    checks: list[tuple[str, bool | None]] = []
    for noise in noises:
        t = tables[noise]
        if "tau" in columns and "nothing" in columns:
            checks.append((f"N = {noise}: tau helps the last hypothesis ({t['last']['tau'][0]:.1f}"
                           f" vs {t['last']['nothing'][0]:.1f})",
                           t["last"]["tau"][0] > t["last"]["nothing"][0]))
        if noise >= 0.1 and "nothing" in columns:
            checks.append((f"N = {noise}: voted beats last without tau "
                           f"({t['voted']['nothing'][0]:.1f} vs {t['last']['nothing'][0]:.1f})",
                           t["voted"]["nothing"][0] > t["last"]["nothing"][0]))

    def draw(fig: Any) -> None:
        axes = fig.subplots(1, 3, sharey=True)
        for ax, h in zip(axes, kw.HYPOTHESES):
            for c in columns:
                line, = ax.plot(noises, [tables[n][h][c][0] for n in noises], marker="o",
                                label=c)
                known = [n for n in noises if paper[n]]
                if known:
                    ax.plot(known, [paper[n][h][kw.SEARCH_COLUMNS.index(c)] for n in known],
                            ls=":", marker="x", color=line.get_color())
            ax.set_title(h)
            ax.set_xlabel("noise rate N")
        axes[0].set_ylabel("best cross-validated accuracy % (dotted: the paper)")
        axes[0].legend(fontsize=7)

    return Output(f"Khardon & Wachman (2007), Table 4: parameter search, f = 50, M = 0.05 "
                  f"({'reduced size' if args.quick else 'paper size'}, {n_sets} data set(s) per "
                  f"noise level, {config.folds}-fold CV, {config.epochs} epochs, seed "
                  f"{args.seed})", "\n".join(lines),
                  ["noise", "hypothesis", "column", "accuracy", "setting", "paper"], rows,
                  checks, draw)


def _khardon_wdbc(args: argparse.Namespace, engine: Engine) -> Output:
    columns = _columns(args, kw.SEARCH_COLUMNS)
    config = _kw_config(args, columns)
    spec = ("wdbc",)
    task_list = kw.tasks([spec], config, args.seed)
    by_data = kw.collect(task_list, engine.map(kw.fold_task, task_list, "Khardon Wdbc"))
    table = kw.search_table(by_data, [spec], config)
    paper = None if args.quick else TABLE3_WDBC
    checks: list[tuple[str, bool | None]] = []
    for c in ("nothing", "tau"):
        if c in columns:
            ours, ref = table["last"][c][0], TABLE3_WDBC["last"][kw.SEARCH_COLUMNS.index(c)]
            checks.append((f"last hypothesis, {c}: {ours:.1f} within 2 points of the paper's "
                           f"{ref}" + (" (reduced size: not comparable)" if args.quick else ""),
                           None if args.quick else abs(ours - ref) <= 2.0))

    def draw(fig: Any) -> None:
        ax = fig.subplots()
        width = 0.8 / len(kw.HYPOTHESES)
        for i, h in enumerate(kw.HYPOTHESES):
            xs = [j + (i - 1) * width for j in range(len(columns))]
            ax.bar(xs, [table[h][c][0] for c in columns], width, label=h)
            if paper:
                ax.plot(xs, [paper[h][kw.SEARCH_COLUMNS.index(c)] for c in columns], ls="none",
                        marker="_", markersize=14, color="black")
        ax.set_xticks(range(len(columns)), columns)
        ax.set_ylim(80, 100)
        ax.set_ylabel("best cross-validated accuracy % (dashes: the paper)")
        ax.legend(fontsize=8)

    return Output(f"Khardon & Wachman (2007), Table 3, the Wdbc row: parameter search "
                  f"({'reduced size' if args.quick else 'paper size'}, {config.folds}-fold CV, "
                  f"{config.epochs} epochs, seed {args.seed})",
                  "\n".join(_search_text(table, columns, paper, "Wdbc")),
                  ["hypothesis", "column", "accuracy", "setting", "paper"],
                  _search_rows(table, columns, paper, []), checks, draw)


def _khardon_table6(args: argparse.Namespace, engine: Engine) -> Output:
    columns = _columns(args, kw.OPTIMISATION_COLUMNS)
    config = _kw_config(args, columns)
    spec = ("wdbc",)
    task_list = kw.tasks([spec], config, args.seed, inner=True)
    by_data = kw.collect(task_list, engine.map(kw.fold_task, task_list, "Khardon Table 6"))
    table = kw.optimisation_table(by_data[spec], config)
    paper = None if args.quick else TABLE6_WDBC
    lines = [f"{'Wdbc':<12}" + "".join(f"{c:>15}" for c in columns)]
    rows = []
    for h in kw.HYPOTHESES:
        lines.append(f"  {h:<10}" + "".join(
            f"{table[h][c][0]:>8.1f} +/-{table[h][c][1]:>4.1f}" for c in columns))
        if paper:
            lines.append(f"  {'(paper)':<10}" + "".join(
                f"{paper[h][kw.OPTIMISATION_COLUMNS.index(c)][0]:>8.1f} +/-"
                f"{paper[h][kw.OPTIMISATION_COLUMNS.index(c)][1]:>4.1f}" for c in columns))
        for c in columns:
            mean, half, chosen = table[h][c]
            cell: tuple[Any, Any] = (paper[h][kw.OPTIMISATION_COLUMNS.index(c)] if paper
                                     else ("", ""))
            rows.append([h, c, round(mean, 6), round(half, 6),
                         "; ".join(kw.format_setting(s) for s in chosen), cell[0], cell[1]])
    checks: list[tuple[str, bool | None]] = []
    for h in kw.HYPOTHESES:
        for c in columns:
            if paper:
                mean, half, _ = table[h][c]
                ref = paper[h][kw.OPTIMISATION_COLUMNS.index(c)][0]
                checks.append((f"{h}, {c}: the paper's {ref} lies in our interval "
                               f"{mean:.1f} +/- {half:.1f}", abs(mean - ref) <= half))

    def draw(fig: Any) -> None:
        ax = fig.subplots()
        width = 0.8 / len(kw.HYPOTHESES)
        for i, h in enumerate(kw.HYPOTHESES):
            xs = [j + (i - 1) * width for j in range(len(columns))]
            ax.errorbar(xs, [table[h][c][0] for c in columns],
                        yerr=[0 if math.isnan(table[h][c][1]) else table[h][c][1]
                              for c in columns], fmt="o", capsize=3, label=h)
            if paper:
                ax.plot([x + width / 3 for x in xs],
                        [paper[h][kw.OPTIMISATION_COLUMNS.index(c)][0] for c in columns], "kx")
        ax.set_xticks(range(len(columns)), columns, fontsize=7)
        ax.set_ylabel("accuracy % with 95% T-interval (x: the paper)")
        ax.legend(fontsize=8)

    return Output(f"Khardon & Wachman (2007), Table 6, the Wdbc row: parameter optimisation "
                  f"by double cross-validation ({'reduced size' if args.quick else 'paper size'}"
                  f", {config.folds} x {config.inner_folds} folds, {config.epochs} epochs, seed "
                  f"{args.seed})", "\n".join(lines),
                  ["hypothesis", "column", "accuracy", "t_half_width", "chosen_per_fold",
                   "paper", "paper_half_width"], rows, checks, draw)


EXPERIMENTS: dict[str, tuple[str, Callable[[argparse.Namespace, Engine], Output]]] = {
    "ho-artificial": ("Brotto, Gentile & Vitale 2007, section 4, Task 1: HO_p(c) on "
                      "Artificial 0.0 / 0.1, updates and test error per epoch (Figure 2)",
                      _ho_artificial),
    "sop-simulation": ("Cesa-Bianchi, Conconi & Gentile 2005: the Gaussian simulation, test "
                       "mistakes of SOP (a = 1, 10, 50) against the Perceptron",
                       _sop_simulation),
    "pumma-r-of-k": ("Ishibashi, Hatano & Takeda 2008, section 5.1: updates to convergence "
                     "of PUMMA against ROMMA (and ALMA) with augmentation, r-of-k data",
                     _pumma_r_of_k),
    "khardon-table4": ("Khardon & Wachman 2007, Table 4: parameter search on the artificial "
                       "data, f = 50, M = 0.05, noise 0 .. 0.25", _khardon_table4),
    "khardon-wdbc": ("Khardon & Wachman 2007, Table 3, the Wdbc row: parameter search",
                     _khardon_wdbc),
    "khardon-table6": ("Khardon & Wachman 2007, Table 6, the Wdbc row: parameter optimisation "
                       "by double cross-validation, 95% T-intervals", _khardon_table6),
}


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="perceptron-oracle experiment",
        description="Rerun a paper's experiment: the table and its reproduction checks "
                    "printed, OUT/<name>.csv written, OUT/<name>.png drawn (matplotlib).")
    parser.add_argument("name", nargs="?", help="the experiment (--list)")
    parser.add_argument("--list", action="store_true", help="list the experiments")
    parser.add_argument("--quick", action="store_true",
                        help="a reduced size (seconds) instead of the paper's")
    parser.add_argument("--jobs", type=int, default=1,
                        help="parallel workers (joblib; default 1: a plain loop)")
    parser.add_argument("--backend", default="loky", choices=("loky", "dask"),
                        help="loky: local processes; dask: dask.distributed through joblib")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="a running dask scheduler (default with --backend dask: a "
                             "LocalCluster of --jobs workers)")
    parser.add_argument("--seed", type=int, default=0, help="the base seed (default 0)")
    parser.add_argument("--out", default=".", metavar="DIR",
                        help="where the CSV and PNG go (default: the current directory)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--noise", type=float, action="append", default=None,
                        help="khardon-table4: only this noise level (repeatable)")
    parser.add_argument("--columns", default=None,
                        help="khardon-*: only these table columns, comma-separated (e.g. "
                             "nothing,tau); the grid shrinks to what they need")
    parser.add_argument("--alma", action="store_true",
                        help="pumma-r-of-k at full size: add ALMA (slow: 10^5 - 10^6 "
                             "corrections per run)")
    return parser


def write_csv(path: pathlib.Path, header: list[str], rows: list[list[Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        for row in rows:
            writer.writerow([repr(v) if isinstance(v, float) else v for v in row])


def draw_png(path: pathlib.Path, output: Output) -> bool:
    """Draw the figure; False when matplotlib is not installed."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return False
    fig = Figure(figsize=(11, 7) if output.draw is not None else (6, 4), dpi=100,
                 layout="constrained")
    if output.draw is not None:
        output.draw(fig)
    fig.suptitle(output.title, fontsize=9)
    fig.savefig(path)
    return True


@one_line("perceptron-oracle experiment")
def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.list:
        width = max(map(len, EXPERIMENTS))
        for name, (text, _) in EXPERIMENTS.items():
            print(f"{name:<{width}}  {text}")
        return 0
    if args.name is None:
        raise OracleInputError("name an experiment (perceptron-oracle experiment --list)")
    if args.name not in EXPERIMENTS:
        raise OracleInputError(f"unknown experiment {args.name!r} (known: "
                               f"{', '.join(EXPERIMENTS)})")
    if args.noise is not None and args.name != "khardon-table4":
        raise OracleInputError("--noise applies to khardon-table4 only")
    if args.columns is not None and not args.name.startswith("khardon-"):
        raise OracleInputError("--columns applies to the khardon-* experiments only")
    if args.alma and args.name != "pumma-r-of-k":
        raise OracleInputError("--alma applies to pumma-r-of-k only")
    out_dir = pathlib.Path(args.out)
    if out_dir.exists() and not out_dir.is_dir():
        raise OracleInputError(f"--out {out_dir} is not a directory")
    engine = Engine(args.jobs, args.backend, args.scheduler, progress=not args.no_progress)
    with engine.session():
        output = EXPERIMENTS[args.name][1](args, engine)
    print(output.title)
    print(output.table)
    if output.checks:
        print("\nreproduction checks:")
        for text, ok in output.checks:
            mark = {True: "holds", False: "DOES NOT HOLD", None: "n/a"}[ok]
            print(f"  [{mark}] {text}")
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / f"{args.name}.csv"
    write_csv(csv_path, output.header, output.rows)
    print(f"\nwrote {csv_path}")
    png_path = out_dir / f"{args.name}.png"
    if draw_png(png_path, output):
        print(f"wrote {png_path}")
    else:
        print("no figure: matplotlib is not installed (pip install matplotlib)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
