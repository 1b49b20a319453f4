"""Your own images: train --dataset folder:<path> on a folder with one subfolder per class,
read by a DataLoader whose settings suit the device and Windows; class names in any script in
the plots."""

from __future__ import annotations

import json
import os
import pickle
import struct
import warnings
import zlib

import pytest
import torch
from matplotlib import font_manager
from matplotlib.ft2font import FT2Font

from {{ cookiecutter.package_name }} import (
    data,
    evaluate,
    train,
)
from {{ cookiecutter.package_name }}.datasets import (
    folder,
    folder_scan,
)
from {{ cookiecutter.package_name }}.machinery import (
    plots,
)

SHAPES = ("circle", "cross", "square")


def _draw(shape: str, index: int):
    """A 36x36 colour picture of ``shape``, moved and sized a little differently each time."""
    from PIL import Image, ImageDraw

    picture = Image.new("RGB", (36, 36), (20 + index % 7 * 10, 30, 60))
    pen = ImageDraw.Draw(picture)
    lo, hi = 6 + index % 5, 28 - index % 4
    colour = (255, 200 + index % 50, 80)
    if shape == "circle":
        pen.ellipse((lo, lo, hi, hi), outline=colour, width=3)
    elif shape == "square":
        pen.rectangle((lo, lo, hi, hi), outline=colour, width=3)
    else:
        pen.line((lo, lo, hi, hi), fill=colour, width=3)
        pen.line((lo, hi, hi, lo), fill=colour, width=3)
    return picture


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    """my_shapes/circle, cross, square: 40 PNG and JPEG pictures each, in colour, 36x36."""
    root = tmp_path_factory.mktemp("pictures") / "my_shapes"
    for shape in SHAPES:
        (root / shape).mkdir(parents=True)
        for index in range(40):
            suffix = "png" if index % 2 else "jpg"
            _draw(shape, index).save(root / shape / f"{index:03d}.{suffix}")
    return root


def test_a_folder_is_split_into_grey_28x28_batches(shapes):
    dataset = data.load_dataset(f"folder:{shapes}")
    sizes = (len(dataset.train), len(dataset.val), len(dataset.test))
    assert sum(sizes) == 120 and 4 <= sizes[1] <= 24 and 4 <= sizes[2] <= 24, sizes
    images, labels = next(data.batches(dataset.train, 32))
    assert images.shape == (32, 1, 28, 28) and images.dtype == torch.uint8
    assert set(labels.tolist()) <= {0, 1, 2}
    assert "3 classes: circle, cross, square" in dataset.description


@pytest.mark.slow
def test_training_on_your_own_images_learns_them(shapes, tmp_path, cpu_discovery):
    cfg = train.TrainConfig(
        epochs=4, batch_size=16, dataset=f"folder:{shapes}", device="cpu", output_dir=tmp_path
    )
    result = train.train(cfg, discovery=cpu_discovery)
    assert result.test_accuracy >= 0.9  # three shapes; chance is a third
    report = evaluate.evaluate_checkpoint(tmp_path / "last.pt", "cpu", discovery=cpu_discovery)
    assert report.images == len(data.load_dataset(f"folder:{shapes}").test)
    assert report.accuracy == result.test_accuracy


def test_the_command_line_takes_a_folder(shapes, tmp_path, capsys, cpu_only):
    argv = ["--dataset", f"folder:{shapes}", "--epochs", "1", "--output-dir", str(tmp_path)]
    assert train.main(argv) == 0
    assert "your images in" in capsys.readouterr().out


def test_a_folder_without_class_folders_is_one_clear_sentence(tmp_path, capsys, cpu_only):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.png").write_bytes(b"")
    argv = ["--dataset", f"folder:{tmp_path / 'photos'}", "--output-dir", str(tmp_path / "r")]
    assert train.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: No images found in {tmp_path / 'photos'}: --dataset folder:")
    assert "one subfolder per class" in err and "Traceback" not in err


def test_a_missing_folder_is_named(tmp_path, capsys, cpu_only):
    argv = ["--dataset", f"folder:{tmp_path / 'nope'}", "--output-dir", str(tmp_path / "r")]
    assert train.main(argv) == 2
    assert f"{tmp_path / 'nope'} is not a folder" in capsys.readouterr().err


LOADERS = [  # the device, the pictures, the CPU cores, and the DataLoader's settings
    ("cuda", 50_000, 8, folder.LoaderSettings(4, True, True)),  # pinned copies to the GPU
    ("privateuseone", 50_000, 8, folder.LoaderSettings(4, False, True)),  # DirectML
    ("xpu", 50_000, 4, folder.LoaderSettings(3, False, True)),  # one core for the loop
    ("cpu", 50_000, 2, folder.LoaderSettings(0, False, False)),  # training uses the cores
    ("cuda", 500, 16, folder.LoaderSettings(0, True, False)),  # spawning costs more
]


def test_loader_settings_suit_the_device():
    chosen = [folder.loader_settings(device, images, cpus) for device, images, cpus, _ in LOADERS]
    assert chosen == [expected for *_, expected in LOADERS]


def test_worker_processes_read_the_same_batches_every_epoch(shapes, monkeypatch):
    """Persistent workers are reused across epochs: each epoch still reads its own order."""
    plain = data.load_dataset(f"folder:{shapes}").train
    pickle.dumps(plain.images)  # what spawned workers (Windows, macOS) receive
    monkeypatch.setattr(
        folder, "loader_settings", lambda *a, **k: folder.LoaderSettings(2, False, True)
    )
    workers = data.load_dataset(f"folder:{shapes}").train
    for seed in (1, 2):  # two epochs, two orders, through the same persistent workers
        a = data.shuffled(plain, torch.Generator().manual_seed(seed))
        b = data.shuffled(workers, torch.Generator().manual_seed(seed))
        for (xa, ya), (xb, yb) in zip(data.batches(a, 32, 1), data.batches(b, 32, 1)):
            assert torch.equal(xa, xb) and torch.equal(ya, yb)
    assert workers.loaders[32].num_workers == 2


def test_mnist_and_synthetic_stay_one_tensor_on_the_device(tiny_dataset):
    assert isinstance(tiny_dataset.train, data.Split)
    assert isinstance(data.shuffled(tiny_dataset.train, torch.Generator()), data.Split)


# --------------------------------------------------------------------------------------------
# A folder as users have them: damaged files, links, pipes, system folders


def _tiny(path, seed: int) -> None:
    """An 8x8 grey PNG of its own: no two seeds give the same picture."""
    from PIL import Image

    pixels = bytes((seed * 7919 + i * 104729) % 251 for i in range(64))
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.frombytes("L", (8, 8), pixels).save(path)


def _pictures(root, classes=("circle", "cross"), per_class=10, start=0):
    for number, name in enumerate(classes):
        for index in range(start, start + per_class):
            _tiny(root / name / f"{index:03d}.png", 1000 * number + index)
    return root


def _png_header_only(path, width: int, height: int) -> None:
    """A PNG that says it is ``width`` x ``height``: what a decompression bomb looks like."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b""))


def _links_allowed(tmp_path) -> bool:
    probe = tmp_path / "probe-link"
    try:
        probe.symlink_to(tmp_path)
    except (OSError, NotImplementedError):  # Windows without the right to make links
        return False
    return probe.is_symlink()  # Wine 8 reports success and makes no link


def test_files_that_are_no_pictures_are_named_and_training_goes_on(tmp_path, capsys, cpu_only):
    root = _pictures(tmp_path / "shapes")
    (root / "circle" / "noise.png").write_bytes(bytes(range(256)) * 3)
    whole = (root / "circle" / "000.png").read_bytes()
    (root / "circle" / "cut.png").write_bytes(whole[: len(whole) // 2])
    _png_header_only(root / "cross" / "huge.png", 20000, 20000)
    (root / "cross" / "._001.png").write_bytes(b"\x00\x05\x16\x07 AppleDouble")
    argv = ["--dataset", f"folder:{root}", "--epochs", "1", "--output-dir", str(tmp_path / "r")]
    assert train.main(argv) == 0
    out = capsys.readouterr().out
    assert "20 images" not in out and "Traceback" not in out
    for name, why in [
        ("circle/noise.png", "cannot be read as a picture"),
        ("circle/cut.png", "cannot be read as a picture"),
        ("cross/huge.png", "too large"),
        ("cross/._001.png", "a hidden file"),
    ]:
        assert f"note    : skipped {name}: {why}" in out, (name, out)
    assert "test accuracy" in out  # trained on the 20 good pictures


def test_many_skipped_files_are_counted_after_the_first_few(tmp_path):
    root = _pictures(tmp_path / "shapes")
    for index in range(9):
        (root / "cross" / f"broken{index}.png").write_bytes(b"not a picture")
    notes = data.load_dataset(f"folder:{root}").notes
    assert len(notes) == folder_scan.SKIPPED_SHOWN + 1
    assert notes[-1] == "... and 4 more (9 skipped)"


def test_a_class_left_with_too_few_pictures_stops_with_one_sentence(tmp_path, capsys, cpu_only):
    root = _pictures(tmp_path / "shapes")
    for index in range(8):
        (root / "circle" / f"{index:03d}.png").write_bytes(b"damaged")
    argv = ["--dataset", f"folder:{root}", "--output-dir", str(tmp_path / "r")]
    assert train.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: Too few usable pictures in {root}: circle 2;")
    assert "(8 files were skipped.)" in err and "Traceback" not in err


def test_links_are_not_followed_and_each_picture_counts_once(tmp_path):
    if not _links_allowed(tmp_path):
        pytest.skip("this system does not let the tests make symbolic links")
    root = _pictures(tmp_path / "shapes")
    plain = data.load_dataset(f"folder:{root}")
    (root / "circle" / "again").symlink_to(root / "circle", target_is_directory=True)
    (root / "cross" / "up").symlink_to(root, target_is_directory=True)
    (root / "circle" / "up").symlink_to(root, target_is_directory=True)
    (root / "cross" / "gone.png").symlink_to(tmp_path / "nowhere.png")
    outside = tmp_path / "elsewhere.png"
    _tiny(outside, 99)
    (root / "cross" / "elsewhere.png").symlink_to(outside)
    os.link(root / "circle" / "003.png", root / "circle" / "003-again.png")
    linked = data.load_dataset(f"folder:{root}")
    assert [len(linked.train), len(linked.val), len(linked.test)] == [
        len(plain.train),
        len(plain.val),
        len(plain.test),
    ]
    skipped = {item.path.as_posix(): item.reason for item in folder_scan.scan(root).skipped}
    for name in ("circle/again", "circle/up", "cross/up", "cross/gone.png", "cross/elsewhere.png"):
        assert skipped[name] == "a link (links are not followed)"
    assert skipped["circle/003.png"] == "the same file as circle/003-again.png"
    assert len(skipped) == 6


def test_a_picture_with_two_names_counts_once(tmp_path):
    root = _pictures(tmp_path / "shapes")
    plain = data.load_dataset(f"folder:{root}")
    try:
        os.link(root / "circle" / "003.png", root / "circle" / "003-again.png")
    except OSError:
        pytest.skip("this file system has no hard links")
    linked = data.load_dataset(f"folder:{root}")
    sizes = [len(linked.train), len(linked.val), len(linked.test)]
    assert sizes == [len(plain.train), len(plain.val), len(plain.test)]
    skipped = {item.path.as_posix(): item.reason for item in folder_scan.scan(root).skipped}
    assert skipped == {"circle/003.png": "the same file as circle/003-again.png"}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_is_skipped_not_waited_on(tmp_path):
    root = _pictures(tmp_path / "shapes")
    os.mkfifo(root / "cross" / "p.png")
    dataset = data.load_dataset(f"folder:{root}")
    assert len(dataset.train) + len(dataset.val) + len(dataset.test) == 20
    assert "skipped cross/p.png: not a regular file (a pipe, socket or device)" in dataset.notes


def test_hidden_and_system_folders_are_no_classes(tmp_path):
    root = _pictures(tmp_path / "shapes")
    (root / ".ipynb_checkpoints").mkdir()
    _pictures(root / "__MACOSX", classes=("circle",), per_class=3)
    _pictures(root / ".trash", classes=("old",), per_class=3)
    dataset = data.load_dataset(f"folder:{root}")
    assert dataset.classes == ["circle", "cross"]
    assert "2 classes: circle, cross" in dataset.description
    assert dataset.notes[0] == (
        "left out (hidden or system folders, not classes): .ipynb_checkpoints, .trash, __MACOSX"
    )


# --------------------------------------------------------------------------------------------
# The split stays put


def _by_path(dataset) -> dict:
    found = {}
    for part in ("train", "val", "test"):
        split = getattr(dataset, part)
        for index in split.order.tolist():
            found[split.images.pictures[index].path] = part
    return found


def test_adding_pictures_moves_no_picture_to_another_part(tmp_path):
    root = _pictures(tmp_path / "shapes", per_class=30)
    before = _by_path(data.load_dataset(f"folder:{root}"))
    _pictures(root, per_class=1, start=30)  # one more picture per class
    after = _by_path(data.load_dataset(f"folder:{root}"))
    assert len(after) == len(before) + 2
    assert {path: after[path] for path in before} == before


@pytest.mark.slow
def test_evaluate_says_when_the_folder_changed_since_training(tmp_path, capsys, cpu_only):
    root = _pictures(tmp_path / "shapes")
    runs = tmp_path / "r"
    argv = ["--dataset", f"folder:{root}", "--epochs", "1", "--output-dir", str(runs)]
    assert train.main(argv) == 0
    assert evaluate.main(["--output-dir", str(runs), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "changed since training" not in out and "nan" not in out and "MNIST test" not in out
    assert "% on the test part of your images (shapes) (" in out
    rows = out.split("most often taken for\n")[1].split("\n\n")[0].splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["circle", "cross"]  # no rows 0-9
    saved = (runs / "test_metrics.json").read_text(encoding="utf-8")
    metrics = json.loads(saved, parse_constant=lambda word: pytest.fail(f"{word} in JSON"))
    assert metrics["classes"] == ["circle", "cross"]
    assert set(metrics["per_class_accuracy"]) == {"circle", "cross"}
    _pictures(root, per_class=1, start=10)
    assert evaluate.main(["--output-dir", str(runs), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "note: the pictures changed since training (train " in out
    # a --resume would continue on other pictures than the run's: it says so and stops
    assert train.main(["--output-dir", str(runs), "--resume"]) == 2
    assert "the pictures changed since training" in capsys.readouterr().err
    _pictures(root, classes=("arrow",), per_class=5)  # a new class: the outputs mean others
    assert evaluate.main(["--output-dir", str(runs), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "the classes changed since training (then: circle, cross; now: arrow, circle, " in err


def test_evaluate_of_a_run_whose_test_picture_was_damaged_since(tmp_path, capsys, cpu_only):
    root = _pictures(tmp_path / "shapes")
    runs = tmp_path / "r"
    argv = ["--dataset", f"folder:{root}", "--epochs", "1", "--output-dir", str(runs)]
    assert train.main(argv) == 0
    test = data.load_dataset(f"folder:{root}").test
    damaged = test.images.pictures[int(test.order[0])].path
    damaged.write_bytes(b"damaged later")
    capsys.readouterr()
    assert evaluate.main(["--output-dir", str(runs), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert f"skipped {damaged.relative_to(root).as_posix()}: cannot be read" in out
    assert "changed since training" in out and "Traceback" not in out


@pytest.mark.skipif(os.name == "nt", reason="Windows allows no control characters in names")
def test_class_names_cannot_steer_the_terminal(tmp_path, capsys, cpu_only):
    root = _pictures(tmp_path / "shapes", classes=("\x1b]0;owned\x07", "\x1b[2Jclear"), per_class=6)
    runs = tmp_path / "r"
    argv = ["--dataset", f"folder:{root}", "--epochs", "1", "--output-dir", str(runs)]
    assert train.main(argv) == 0
    assert "(2 classes: \\x1b[2Jclear, \\x1b]0;owned\\x07)" in capsys.readouterr().out
    assert evaluate.main(["--output-dir", str(runs), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[2Jclear" in out.split("most often taken for")[1]  # the table's rows


def test_a_picture_damaged_during_training_is_one_sentence(tmp_path, capsys, cpu_only, monkeypatch):
    root = _pictures(tmp_path / "shapes")
    checked = data.load_dataset

    def checked_then_damaged(*args, **kwargs):  # the file changes after the check
        loaded = checked(*args, **kwargs)
        (root / "circle" / "004.png").write_bytes(b"damaged after the check")
        return loaded

    monkeypatch.setattr(data, "load_dataset", checked_then_damaged)
    argv = ["--dataset", f"folder:{root}", "--epochs", "1", "--output-dir", str(tmp_path / "r")]
    assert train.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {root / 'circle' / '004.png'} could not be read any more (")
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_a_workers_error_is_said_without_its_traceback():
    wrapped = folder.FolderUnavailable(
        "Caught FolderUnavailable in DataLoader worker process 0.\nOriginal Traceback (most "
        'recent call last):\n  File "x.py", line 1\n'
        f"{folder.FolderUnavailable.__module__}.FolderUnavailable: /a/b.png could not be read"
    )
    assert folder.one_sentence(wrapped) == "/a/b.png could not be read"


# --------------------------------------------------- names in any script, in the plots
# Class and folder names in any script in the plots: drawn in a font that has them where
# this computer has one, else written as their codes; never empty boxes, never a warning per
# character on the console.

NAMES = ["手写", "圆形"]  # Chinese class names, as the project's Chinese README invites
HISTORY = [
    {"epoch": 1, "train_loss": 1.0, "train_accuracy": 0.5, "val_loss": 0.9, "val_accuracy": 0.6}
]


@pytest.fixture
def fonts_as_found():
    """The plots look at this computer's fonts afresh, and again after the test."""
    plots.font_families.cache_clear()
    yield
    plots.font_families.cache_clear()


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
    chinese = [f for f in plots.font_families() if _has_glyph(f, "手")]
    if not chinese:
        pytest.skip("no font with Chinese characters on this computer (fc-list :lang=zh)")
    curves, matrix, caught = _draw_both(tmp_path)
    assert not [message for message in caught if "missing from font" in message]
    label = matrix.axes[0].get_yticklabels()[0]
    assert label.get_text() == "手写"
    assert "(手写)" in curves._suptitle.get_text()
    families = label.get_fontproperties().get_family()
    assert families[0] == "DejaVu Sans" and chinese[0] in families  # Latin in DejaVu as before
