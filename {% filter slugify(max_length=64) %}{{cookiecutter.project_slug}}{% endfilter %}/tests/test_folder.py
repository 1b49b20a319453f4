"""Your own images: train --dataset folder:<path> on a folder with one subfolder per class,
read by a DataLoader whose settings suit the device and Windows."""

from __future__ import annotations

import pickle

import pytest
import torch

from {{ cookiecutter.package_name }} import (
    data,
    evaluate,
    train,
)
from {{ cookiecutter.package_name }}.datasets import (
    folder,
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
    assert (len(dataset.train), len(dataset.val), len(dataset.test)) == (96, 12, 12)
    images, labels = next(data.batches(dataset.train, 32))
    assert images.shape == (32, 1, 28, 28) and images.dtype == torch.uint8
    assert set(labels.tolist()) <= {0, 1, 2}
    assert "3 classes: circle, cross, square" in dataset.description


def test_training_on_your_own_images_learns_them(shapes, tmp_path, cpu_discovery):
    cfg = train.TrainConfig(
        epochs=4, batch_size=16, dataset=f"folder:{shapes}", device="cpu", output_dir=tmp_path
    )
    result = train.train(cfg, discovery=cpu_discovery)
    assert result.test_accuracy >= 0.9  # three shapes; chance is a third
    report = evaluate.evaluate_checkpoint(tmp_path / "best.pt", "cpu", discovery=cpu_discovery)
    assert report.images == 12 and report.accuracy >= 0.9


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


@pytest.mark.parametrize(
    ("device", "images", "cpus", "expected"),
    [
        ("cuda", 50_000, 8, folder.LoaderSettings(4, True, True)),  # pinned copies to the GPU
        ("privateuseone", 50_000, 8, folder.LoaderSettings(4, False, True)),  # DirectML
        ("xpu", 50_000, 4, folder.LoaderSettings(3, False, True)),  # one core for the loop
        ("cpu", 50_000, 2, folder.LoaderSettings(0, False, False)),  # training uses the cores
        ("cuda", 500, 16, folder.LoaderSettings(0, True, False)),  # spawning costs more
    ],
)
def test_loader_settings_suit_the_device(device, images, cpus, expected):
    assert folder.loader_settings(device, images, cpus) == expected


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
