"""Training curves, the comparison of runs and confusion matrices, as PNG pictures.

Plots use matplotlib's object API with the Agg canvas: no window, no global backend switch
(``matplotlib.use`` would change the backend of a notebook that imports this module), and it
works on machines without a display. matplotlib is imported only when a plot is drawn.

Text in any script: matplotlib's own font (DejaVu Sans) has Latin, Greek and Cyrillic, not
Chinese, so a class named 手写 would be empty boxes and a "Glyph ... missing from font" warning
per character. matplotlib (3.6 and later) takes each character from the first font in
``font.family`` that has it, so the plots name DejaVu Sans first and then the fonts for other
scripts that this computer has (``font_families``). A character none of them has is written as
its code (``\\u624b``).
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from pathlib import Path
from typing import Any, Iterator, Sequence

from .checkpoints import CheckpointWriteError, atomic_path
from .terminal_text import printable

CURVES_PNG = "curves.png"
CONFUSION_PNG = "confusion_matrix.png"

DATASET_LABELS = {"mnist": "MNIST", "synthetic": "SYNTHETIC digits (generated, not MNIST)"}


# Fonts with the scripts DejaVu Sans lacks, as Windows, macOS and Linux name them.
OTHER_SCRIPTS = (
    "Microsoft YaHei",
    "SimHei",
    "PingFang SC",
    "Hiragino Sans GB",
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Source Han Sans SC",
    "Source Han Sans CN",
    "Source Han Sans",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Yu Gothic",
    "Meiryo",
    "Malgun Gothic",
    "Noto Sans CJK KR",
    "Nirmala UI",
    "Segoe UI",
    "Noto Sans Devanagari",
    "Noto Sans Arabic",
    "Noto Sans Hebrew",
    "Noto Sans Thai",
)
MAIN = "DejaVu Sans"  # matplotlib ships it: every computer has it


@functools.lru_cache(maxsize=None)
def font_families() -> tuple[str, ...]:
    """DejaVu Sans, then the fonts for other scripts that this computer has (none where
    matplotlib is older than 3.6: it would use only the first)."""
    import matplotlib
    from matplotlib import font_manager

    version = tuple(int(part) for part in matplotlib.__version__.split(".")[:2] if part.isdigit())
    if version < (3, 6):
        return (MAIN,)
    installed = {font.name for font in font_manager.fontManager.ttflist}
    return (MAIN, *(name for name in OTHER_SCRIPTS if name in installed))


@functools.lru_cache(maxsize=None)
def _font_characters(family: str) -> frozenset[int]:
    """The characters ``family``'s font has (empty if it cannot be read)."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    try:
        path = font_manager.findfont(
            font_manager.FontProperties(family=family), fallback_to_default=False
        )
        return frozenset(FT2Font(path).get_charmap())
    except (OSError, RuntimeError, ValueError):
        return frozenset()


def drawable(character: str) -> bool:
    return character.isspace() or any(
        ord(character) in _font_characters(f) for f in font_families()
    )


def readable(text: str) -> str:
    """``text`` with each character no plot font has written as its code: readable, and no
    warning from matplotlib."""
    return "".join(
        c if drawable(c) else (f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}")
        for c in text
    )


@contextlib.contextmanager
def fonts_in_use() -> Iterator[None]:
    """Text made (and drawn) inside takes each character from the first of ``families``
    that has it; matplotlib's settings are as they were afterwards."""
    import matplotlib

    with matplotlib.rc_context({"font.family": list(font_families())}):
        yield


def _with_plot_fonts(build: Any) -> Any:
    """``build`` makes (or draws) its text with fonts for every script (``fonts_in_use``)."""

    @functools.wraps(build)
    def building(*args: Any, **kwargs: Any) -> Any:
        with fonts_in_use():
            return build(*args, **kwargs)

    return building


def _new_figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    return figure


@_with_plot_fonts
def _save(figure, path: Path) -> Path:
    path = Path(path)
    try:
        with atomic_path(path) as tmp:
            figure.savefig(str(tmp), format="png")
    except OSError as error:
        raise CheckpointWriteError(f"Could not write {path}: {error.strerror or error}.") from error
    return path


def plain(text: str) -> str:
    """``text`` as matplotlib shows it literally: a pair of ``$`` would otherwise start
    mathtext (``sh$\\foo$pes`` fails to draw), and a folder's name is the user's text; a
    character no font here has is written as its code (``readable``)."""
    return readable(str(text)).replace("$", r"\$")


def draw_safely(draw: Any, path: Path) -> Path | str:
    """``draw()``'s path, or one sentence saying why the picture at ``path`` was not drawn: a
    picture never costs a run (its checkpoints and metrics are written already). numpy's
    warnings while drawing (a loss of 1e300 in another run's metrics.json overflows the log
    axis) are not shown: the picture draws what it can, and a raw warning helps no one."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return draw()
    except Exception as error:  # matplotlib's ValueError, a full disk, a missing font...
        reason = printable(f"{type(error).__name__}: {error}".splitlines()[0], 200)
        return f"{path.name} could not be drawn ({reason}); everything else is saved."


def dataset_label(name: str) -> str:
    """The dataset's name for a title: 'MNIST', never the folder it was read from; your own
    images by their folder's name."""
    if name.startswith("folder:"):
        return f"your images ({Path(name[len('folder:') :]).name})"
    return DATASET_LABELS.get(name, name)


# Errors below this (in %) are drawn on it, and its tick reads "none": a log axis has no
# zero, and a stretch of batches without a single mistake is common late in a run.
ERROR_FLOOR = 0.01


def error_percent(accuracy: float) -> float:
    """100 * (1 - accuracy), at least ERROR_FLOOR: what the log-scale error axis shows."""
    return max(100.0 * (1.0 - accuracy), ERROR_FLOOR)


def _style_axes(loss_ax, error_ax, last_epoch: int, epochs: Sequence[int], within: bool) -> None:
    """Log axes for loss and error: after the first epoch both shrink by factors (0.3 -> 0.03,
    3 % -> 0.8 %), which a linear axis draws as a flat line at zero."""
    loss_ax.set(xlabel="epoch", ylabel="cross-entropy loss (log scale)", title="Loss")
    error_ax.set(xlabel="epoch", ylabel="error = 100 % - accuracy (log scale)", title="Error (%)")
    from matplotlib.ticker import FuncFormatter

    for ax in (loss_ax, error_ax):
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.25)
        if within:
            ax.set_xlim(-0.02 * last_epoch, 1.02 * last_epoch)
        if last_epoch <= 2 and within:
            ax.set_xticks([quarter / 4 for quarter in range(4 * last_epoch + 1)])
        elif len(epochs) <= 20:
            ax.set_xticks(sorted({0, *epochs}) if within else list(epochs))  # whole epochs
        else:
            ax.xaxis.get_major_locator().set_params(integer=True)
    # 0.1 and 1 % rather than 10^-1 and 10^0: plain numbers for readers new to log scales
    loss_ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    # The floor is where a stretch without a single mistake is drawn: it says so.
    error_ax.yaxis.set_major_formatter(
        FuncFormatter(lambda v, _: "none" if v <= ERROR_FLOOR * 1.001 else f"{v:g} %")
    )


@_with_plot_fonts
def curves_figure(
    history: Sequence[dict[str, Any]],
    title: str,
    within: Sequence[dict[str, Any]] = (),
):
    """Loss and error, training and validation, side by side, both on log scales. ``within``:
    training points inside the epochs (``within_epochs``), drawn as a line so that a one-epoch
    run shows how it learned; validation is measured at the end of each epoch."""
    figure = _new_figure(10, 4.2)
    loss_ax, error_ax = figure.subplots(1, 2)
    epochs = [row["epoch"] for row in history]
    panels = ((loss_ax, "loss", float), (error_ax, "accuracy", error_percent))
    for ax, metric, value in panels:
        if within:
            ax.plot(
                [row["epoch"] for row in within],
                [value(row[f"train_{metric}"]) for row in within],
                color="tab:blue",
                linewidth=1.2,
                alpha=0.8,
                label="training (during the epoch)",
            )
        ax.plot(
            epochs,
            [value(row[f"train_{metric}"]) for row in history],
            "o" if within else "o-",
            color="tab:blue",
            markerfacecolor="white",
            label="training (mean over the epoch)",
        )
        ax.plot(
            epochs,
            [value(row[f"val_{metric}"]) for row in history],
            "o-",
            color="tab:orange",
            label="validation (end of epoch)",
        )
        ax.legend(fontsize=8)
    _style_axes(loss_ax, error_ax, max(epochs, default=1), epochs, bool(within))
    figure.suptitle(plain(title))
    figure.tight_layout()
    return figure


def plot_curves(
    history: Sequence[dict[str, Any]],
    path: Path,
    title: str,
    within: Sequence[dict[str, Any]] = (),
) -> Path:
    """``curves_figure`` as a PNG."""
    figure = curves_figure(history, title, within)
    return _save(figure, path)


@_with_plot_fonts
def comparison_figure(
    runs: Sequence[tuple[str, Sequence[dict[str, Any]], Sequence[dict[str, Any]]]], title: str
):
    """Several runs' curves in one picture, one colour per run: (label, history, within) each.
    Validation at the end of each epoch as dots joined by a line; training during the epochs
    as a thin line of the same colour, so one-epoch runs show their whole curve too."""
    figure = _new_figure(11, 4.8)
    loss_ax, error_ax = figure.subplots(1, 2)
    colours = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")
    last, all_epochs, any_within = 1, set(), False
    for index, (label, history, within) in enumerate(runs):
        colour = colours[index % len(colours)]
        epochs = [row["epoch"] for row in history]
        last = max(last, *epochs) if epochs else last
        all_epochs.update(epochs)
        for ax, metric, value in ((loss_ax, "loss", float), (error_ax, "accuracy", error_percent)):
            if within:
                any_within = True
                ax.plot(
                    [row["epoch"] for row in within],
                    [value(row[f"train_{metric}"]) for row in within],
                    color=colour,
                    linewidth=0.9,
                    alpha=0.45,
                )
            ax.plot(
                epochs,
                [value(row[f"val_{metric}"]) for row in history],
                "o-",
                color=colour,
                linewidth=1.8,
                label=plain(label),
            )
    _style_axes(loss_ax, error_ax, last, sorted(all_epochs), any_within)
    error_ax.legend(fontsize=8, title="run", title_fontsize=8)
    figure.suptitle(plain(title))
    figure.text(
        0.5,
        0.01,
        "dots: validation at the end of each epoch; thin lines: training during the epochs",
        ha="center",
        fontsize=8,
    )
    figure.tight_layout(rect=(0, 0.04, 1, 1))
    return figure


def plot_comparison(
    runs: Sequence[tuple[str, Sequence[dict[str, Any]], Sequence[dict[str, Any]]]],
    path: Path,
    title: str,
) -> Path:
    """``comparison_figure`` as a PNG."""
    figure = comparison_figure(runs, title)
    return _save(figure, path)


def plot_confusion(
    matrix: Sequence[Sequence[int]], path: Path, title: str, classes: Sequence[str] | None = None
) -> Path:
    """The confusion matrix (``confusion_figure``) as a PNG."""
    figure = confusion_figure(matrix, title, classes)
    return _save(figure, path)


@_with_plot_fonts
def confusion_figure(
    matrix: Sequence[Sequence[int]], title: str, classes: Sequence[str] | None = None
):
    """A 10x10 confusion matrix: rows are true digits, columns predictions, counts in cells.
    For a folder's ``classes``: one row and column per class, named (the model's other outputs
    get a column only when it chose them).

    The correct predictions on the diagonal are drawn apart, in pale green: on their scale
    (about 1,000 per digit for MNIST) the few errors would be invisible. The errors get
    their own colour scale, in red, so that the digits the model confuses stand out."""
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    figure = _new_figure(6.5, 6)
    ax = figure.subplots()
    counts = np.asarray(matrix, dtype=float)
    names = [str(d) for d in range(len(counts))]
    if classes:
        chosen = [j for j in range(len(counts)) if counts[:, j].any()]  # outputs it answered
        used = max(len(classes), 1 + max(chosen, default=0))
        counts = counts[: len(classes), :used]
        extra = [f"({j})" for j in range(len(classes), used)]
        counts = np.pad(counts, ((0, used - len(classes)), (0, 0)))
        names = [plain(printable(name, 20)) for name in classes] + extra
    size = len(counts)
    diagonal = np.eye(size, dtype=bool)
    errors = np.ma.masked_where(diagonal, counts)
    worst = max(float(errors.max() or 0), 1.0)
    image = ax.imshow(errors, cmap="Reds", vmin=0, vmax=worst)
    correct = np.ma.masked_where(~diagonal, counts)
    ax.imshow(correct, cmap="Greens", vmin=0, vmax=3 * max(float(correct.max() or 0), 1.0))
    bar = figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label("wrong predictions (off the diagonal)")
    bar.locator = MaxNLocator(integer=True)  # counts: no 0.5 on the scale
    bar.update_ticks()
    for i in range(size):
        for j in range(size):
            count = int(counts[i][j])
            if i == j:
                ax.text(j, i, str(count), ha="center", va="center", fontsize=7, weight="bold")
            elif count:
                colour = "white" if count > worst / 2 else "black"
                ax.text(j, i, str(count), ha="center", va="center", fontsize=7, color=colour)
    what = "class" if classes else "digit"
    ax.set(
        xticks=range(size),
        yticks=range(size),
        xlabel=f"predicted {what}",
        ylabel=f"true {what}",
        title=plain(title),
    )
    ax.set_xticklabels(names, rotation=45 if classes else 0, ha="right" if classes else "center")
    ax.set_yticklabels(names)
    figure.text(  # below the class names, however long they are
        0.5,
        0.01,
        "green: correct (the diagonal); red: errors, on their own scale",
        ha="center",
        fontsize=8,
    )
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    return figure
