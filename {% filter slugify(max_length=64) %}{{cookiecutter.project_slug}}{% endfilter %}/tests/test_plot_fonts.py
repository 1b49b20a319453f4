"""Class and folder names in any script in the plots: drawn in a font that has them where
this computer has one, else written as their codes; never empty boxes, never a warning per
character on the console."""

from __future__ import annotations

import warnings

import pytest
from matplotlib import font_manager
from matplotlib.ft2font import FT2Font

from {{ cookiecutter.package_name }}.machinery import plot_fonts, plots

NAMES = ["手写", "圆形"]  # Chinese class names, as the project's Chinese README invites
HISTORY = [
    {"epoch": 1, "train_loss": 1.0, "train_accuracy": 0.5, "val_loss": 0.9, "val_accuracy": 0.6}
]


@pytest.fixture
def fonts_as_found():
    """plot_fonts looks at this computer's fonts afresh, and again after the test."""
    plot_fonts.families.cache_clear()
    yield
    plot_fonts.families.cache_clear()


@pytest.fixture
def no_font_for_chinese(monkeypatch, fonts_as_found):
    """A computer with matplotlib's own fonts only (DejaVu Sans has no Chinese)."""
    own = [font for font in font_manager.fontManager.ttflist if font.name.startswith("DejaVu")]
    monkeypatch.setattr(font_manager.fontManager, "ttflist", own)


def _draw_both(tmp_path):
    """curves.png titled with a Chinese folder name and confusion_matrix.png of Chinese
    classes, and the warnings matplotlib gave while drawing them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        curves = plots.curves_figure(HISTORY, "LeNet-5 on your images (手写) - cpu")
        plots.plot_curves(HISTORY, tmp_path / "curves.png", "LeNet-5 on your images (手写)")
        matrix = plots.confusion_figure([[3, 1], [0, 4]], "your images (手写)", NAMES)
        plots.plot_confusion([[3, 1], [0, 4]], tmp_path / "matrix.png", "手写", NAMES)
    assert (tmp_path / "curves.png").stat().st_size and (tmp_path / "matrix.png").stat().st_size
    return curves, matrix, [str(w.message) for w in caught]


def _has_glyph(family: str, character: str) -> bool:
    path = font_manager.findfont(font_manager.FontProperties(family=family))
    return ord(character) in FT2Font(path).get_charmap()


def test_without_a_font_for_them_the_names_are_written_as_codes_with_no_warning(
    tmp_path, no_font_for_chinese
):
    curves, matrix, caught = _draw_both(tmp_path)
    assert not [message for message in caught if "missing from font" in message]
    labels = [label.get_text() for label in matrix.axes[0].get_yticklabels()]
    assert labels == ["\\u624b\\u5199", "\\u5706\\u5f62"]
    assert "(\\u624b\\u5199)" in matrix.axes[0].get_title()
    assert "(\\u624b\\u5199)" in curves._suptitle.get_text()
    assert plots.plain("ünïcödé Ωμέγα Привет") == "ünïcödé Ωμέγα Привет"  # DejaVu has them


def test_with_a_font_for_them_the_names_are_drawn_in_it(tmp_path, fonts_as_found):
    chinese = [f for f in plot_fonts.families() if _has_glyph(f, "手")]
    if not chinese:
        pytest.skip("no font with Chinese characters on this computer (fc-list :lang=zh)")
    curves, matrix, caught = _draw_both(tmp_path)
    assert not [message for message in caught if "missing from font" in message]
    label = matrix.axes[0].get_yticklabels()[0]
    assert label.get_text() == "手写"
    assert "(手写)" in curves._suptitle.get_text()
    families = label.get_fontproperties().get_family()
    assert families[0] == "DejaVu Sans" and chinese[0] in families  # Latin in DejaVu as before
