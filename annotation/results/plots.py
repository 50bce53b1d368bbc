"""Leaderboard plots as matplotlib ``Figure`` objects (no pyplot: no global state, safe in
Gradio's worker threads). The UI shows them with ``gr.Plot``; nothing here imports gradio.
matplotlib is imported when a plot is first drawn, not when the app starts (0.3 s of it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from annotation.results.ratings import Row

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def ratings_figure(rows: Sequence[Row], title: str = "") -> Figure:
    """Two panels, best first: TrueSkill mu with mu ± 3 sigma, and Bradley–Terry (Elo scale)
    with its bootstrap 95% interval."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 0.45 * max(len(rows), 2) + 1.4), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(rows))[::-1]
    names = [r.method for r in rows]
    mu = np.array([r.mu for r in rows])
    three = np.array([3 * r.sigma for r in rows])
    left.errorbar(mu, y, xerr=three, fmt="o", capsize=3)
    left.set(title="TrueSkill: mu ± 3 sigma", xlabel="rating", yticks=y, yticklabels=names)
    bt = np.array([r.bt for r in rows])
    err = np.array([[r.bt - r.bt_low for r in rows], [r.bt_high - r.bt for r in rows]]).clip(min=0)
    right.errorbar(bt, y, xerr=err, fmt="s", color="tab:orange", capsize=3)
    right.set(title="Bradley–Terry (Elo scale), 95% bootstrap CI", xlabel="score")
    for ax in (left, right):
        ax.grid(axis="x", alpha=0.3)
    if title:
        fig.suptitle(title)
    return fig


def matrix_figure(matrix: np.ndarray, methods: Sequence[str], title: str, *, percent: bool) -> Figure:
    """A heat map of a method × method matrix (row against column), each cell labelled; NaN
    cells (no battles) left blank."""
    n = len(methods)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1.0 + 0.8 * max(n, 2), 0.8 + 0.7 * max(n, 2)), layout="constrained")
    ax = fig.subplots()
    shown = np.ma.masked_invalid(matrix.astype(float))
    image = ax.imshow(shown, cmap="RdBu" if percent else "Blues", vmin=0 if percent else None,
                      vmax=1 if percent else None)
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax.set(xticks=range(n), yticks=range(n), title=title, xlabel="against", ylabel="method")
    ax.set_xticklabels(methods, rotation=45, ha="right")
    ax.set_yticklabels(methods)
    for i in range(n):
        for j in range(n):
            if np.isfinite(matrix[i, j]) and i != j:
                ax.text(j, i, f"{matrix[i, j]:.0%}" if percent else f"{int(matrix[i, j])}",
                        ha="center", va="center", fontsize=8)
    return fig
