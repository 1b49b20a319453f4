"""Data on the device: synthetic digits, MNIST through torchvision, batching and shuffling."""

from __future__ import annotations

import pytest
import torch

from {{ cookiecutter.package_name }} import (
    data,
)
from {{ cookiecutter.package_name }}.datasets import (
    mnist,
    synthetic,
)


def test_synthetic_digits_look_like_mnist():
    split = data.synthetic_digits(500, seed=0)
    assert split.images.shape == (500, 1, 28, 28) and split.images.dtype == torch.uint8
    assert split.labels.dtype == torch.int64
    assert torch.bincount(split.labels, minlength=10).tolist() == [50] * 10  # balanced
    assert split.images.max() >= 200 and split.images.min() == 0  # white strokes on black
    ink = split.images.float() / 255
    assert 0.08 < ink.mean() < 0.2  # MNIST: 0.13
    assert (split.images[:, :, :2, :] == 0).float().mean() > 0.95  # empty margins


def test_synthetic_digits_are_deterministic_from_the_seed():
    a, b = data.synthetic_digits(200, seed=11), data.synthetic_digits(200, seed=11)
    c = data.synthetic_digits(200, seed=12)
    assert torch.equal(a.images, b.images) and torch.equal(a.labels, b.labels)
    assert not torch.equal(a.images, c.images)


def test_synthetic_digits_of_one_class_vary():
    split = data.synthetic_digits(400, seed=1)
    sevens = split.images[split.labels == 7].float()
    assert len(sevens) == 40
    assert len({bytes(img.to(torch.uint8).numpy().tobytes()) for img in sevens}) == 40
    assert (sevens - sevens.mean(0)).abs().mean() > 10  # not one template with noise


def test_fewer_synthetic_digits_than_classes():
    for n in (1, 8):
        split = data.synthetic_digits(n, seed=5)
        assert split.images.shape == (n, 1, 28, 28)
        assert len(set(split.labels.tolist())) == n  # one of each drawn digit, each with ink
        assert all(image.max() > 0 for image in split.images)


def test_synthetic_digits_are_drawn_once_then_read_from_the_data_folder(tmp_path, monkeypatch):
    drawn = data.synthetic_digits(300, seed=21, data_dir=tmp_path)
    kept = tmp_path / "synthetic" / "digits-300-seed21.pt"
    assert kept.is_file()

    def no_drawing(n, seed):
        raise AssertionError("drawn again although a good file is kept")

    monkeypatch.setattr(synthetic, "_cached", no_drawing)
    again = data.synthetic_digits(300, seed=21, data_dir=tmp_path)
    assert torch.equal(again.images, drawn.images) and torch.equal(again.labels, drawn.labels)


def _truncated(path):
    path.write_bytes(path.read_bytes()[:1000])


def _other_code(path):  # a file of an older synthetic.py, or another torch
    torch.save({**torch.load(path, weights_only=True), "maker": "0" * 64}, path)


def _other_pixels(path):  # the maker's mark intact, the images changed
    state = torch.load(path, weights_only=True)
    state["images"][0, 0, 14, 14] ^= 255
    torch.save(state, path)


def test_a_damaged_or_stale_kept_file_is_drawn_again_never_trusted(tmp_path):
    fresh = data.synthetic_digits(300, seed=22)
    data.synthetic_digits(300, seed=22, data_dir=tmp_path)
    kept = tmp_path / "synthetic" / "digits-300-seed22.pt"
    for damage in (_truncated, _other_code, _other_pixels):
        damage(kept)
        read = data.synthetic_digits(300, seed=22, data_dir=tmp_path)
        assert torch.equal(read.images, fresh.images), damage.__name__
        assert torch.equal(read.labels, fresh.labels), damage.__name__
        state = torch.load(kept, weights_only=True)  # replaced by a good file
        assert torch.equal(state["images"], fresh.images), damage.__name__


def test_a_data_folder_that_cannot_be_written_only_means_drawing_again(tmp_path):
    blocker = tmp_path / "data"
    blocker.write_text("a file where the folder should be", encoding="utf-8")
    split = data.synthetic_digits(50, seed=23, data_dir=blocker)
    assert torch.equal(split.images, data.synthetic_digits(50, seed=23).images)
    assert [p.name for p in tmp_path.iterdir()] == ["data"]


def test_synthetic_dataset_is_labelled_and_split(tiny_dataset):
    assert tiny_dataset.synthetic and tiny_dataset.name == "synthetic"
    assert "SYNTHETIC" in tiny_dataset.description and "not MNIST" in tiny_dataset.description
    sizes = len(tiny_dataset.train), len(tiny_dataset.val), len(tiny_dataset.test)
    assert sizes == (1382, 154, 512)


def test_validation_split_is_disjoint_and_fixed():
    images = torch.arange(100, dtype=torch.uint8).reshape(100, 1, 1, 1).expand(100, 1, 28, 28)
    labels = torch.arange(100)
    train, val = data.split_off_validation(images, labels, 10)
    again_train, again_val = data.split_off_validation(images, labels, 10)
    assert len(train) == 90 and len(val) == 10
    assert set(train.labels.tolist()).isdisjoint(val.labels.tolist())
    assert set(train.labels.tolist()) | set(val.labels.tolist()) == set(range(100))
    assert torch.equal(val.labels, again_val.labels)
    assert torch.equal(train.images[:, 0, 0, 0].long(), train.labels)  # images stay with labels
    with pytest.raises(ValueError):
        data.split_off_validation(images, labels, 100)


def test_batches_are_views_that_cover_the_split_once():
    split = data.synthetic_digits(300, seed=2)
    batches = list(data.batches(split, 128))
    assert [len(labels) for _, labels in batches] == [128, 128, 44]
    assert torch.equal(torch.cat([labels for _, labels in batches]), split.labels)
    storage = split.images.untyped_storage().data_ptr()
    assert all(images.untyped_storage().data_ptr() == storage for images, _ in batches)  # no copies
    resumed = list(data.batches(split, 128, start=1, limit=1))
    assert len(resumed) == 1 and torch.equal(resumed[0][1], split.labels[128:256])


def test_shuffle_is_a_permutation_drawn_from_the_cpu_generator():
    split = data.synthetic_digits(256, seed=3)
    generator = torch.Generator().manual_seed(0)
    first, second = data.shuffled(split, generator), data.shuffled(split, generator)
    assert not torch.equal(first.labels, split.labels)
    assert not torch.equal(first.labels, second.labels)  # a new order every epoch
    assert torch.equal(first.labels.sort().values, split.labels.sort().values)
    # images travel with their labels: find each shuffled image in the original
    index = {bytes(img.numpy().tobytes()): int(lab) for img, lab in zip(split.images, split.labels)}
    assert all(
        index[bytes(img.numpy().tobytes())] == int(lab)
        for img, lab in zip(first.images, first.labels)
    )
    replay = data.shuffled(split, torch.Generator().manual_seed(0))
    assert torch.equal(replay.labels, first.labels)  # reproducible from the generator state


def test_model_input_is_normalised_float32():
    images = torch.tensor([0, 255], dtype=torch.uint8).reshape(2, 1, 1, 1).expand(2, 1, 28, 28)
    x = data.to_model_input(images, torch.device("cpu"))
    assert x.dtype == torch.float32 and x.shape == (2, 1, 28, 28)
    low, high = x[0, 0, 0, 0].item(), x[1, 0, 0, 0].item()
    assert low == pytest.approx(-data.MNIST_MEAN / data.MNIST_STD, abs=1e-5)
    assert high == pytest.approx((1 - data.MNIST_MEAN) / data.MNIST_STD, abs=1e-5)
    assert images.dtype == torch.uint8  # the stored data is untouched


def test_mnist_is_read_through_torchvision(tmp_path, offline, monkeypatch):
    """Files in data/MNIST/raw are read by torchvision itself, without any network."""
    train, test = data.synthetic_digits(120, seed=4), data.synthetic_digits(40, seed=5)
    mnist.write_mnist_raw(tmp_path, train, test)
    monkeypatch.setattr(mnist, "EXPECTED_IMAGES", {"train": 120, "t10k": 40})
    loaded_train, loaded_test = data.load_mnist(tmp_path)
    assert torch.equal(loaded_train.images, train.images)
    assert torch.equal(loaded_test.labels, test.labels)
    monkeypatch.setattr(data, "MNIST_VALIDATION_SIZE", 20)
    dataset = data.load_dataset("mnist", tmp_path)
    assert dataset.name == "mnist" and not dataset.synthetic and "MNIST" in dataset.description
    assert (len(dataset.train), len(dataset.val), len(dataset.test)) == (100, 20, 40)


def test_missing_mnist_offline_says_how_to_get_it(tmp_path, offline):
    with pytest.raises(mnist.MNISTUnavailable) as caught:
        data.load_mnist(tmp_path / "data")
    message = str(caught.value)
    assert str(tmp_path / "data" / "MNIST" / "raw") in message
    assert f"python -m {data.__package__}.data --data-dir" in message
    assert "train-images-idx3-ubyte.gz" in message and "t10k-labels-idx1-ubyte.gz" in message
    assert "--dataset synthetic" in message
    # the underlying reason (torchvision's wording varies by version), all on one line
    assert "could not be downloaded (" in message
    assert "network is unreachable" in message or "Error downloading" in message
    assert "\n" not in message


def test_dataset_moves_to_a_device_as_uint8(tiny_dataset):
    moved = tiny_dataset.to(torch.device("cpu"))
    assert moved.train.images.dtype == torch.uint8
    assert moved.description == tiny_dataset.description


@pytest.fixture
def small_mnist(tmp_path, monkeypatch):
    """Synthetic digits written as the four MNIST files; returns (data_dir, raw folder)."""
    monkeypatch.setattr(mnist, "EXPECTED_IMAGES", {"train": 120, "t10k": 40})
    train, test = data.synthetic_digits(120, seed=4), data.synthetic_digits(40, seed=5)
    return tmp_path, mnist.write_mnist_raw(tmp_path, train, test)


def test_a_folder_holding_the_four_files_directly_is_accepted(small_mnist, offline, tmp_path):
    _, raw = small_mnist
    handed_round = tmp_path / "usb-stick"
    raw.rename(handed_round)  # the files themselves, without MNIST/raw around them
    train, test = data.load_mnist(handed_round)
    assert (len(train), len(test)) == (120, 40)
    assert mnist.mnist_raw_folder(handed_round) == handed_round
    assert not (handed_round / "MNIST").exists()


def test_a_failed_load_leaves_no_empty_folder_behind(tmp_path, offline):
    with pytest.raises(mnist.MNISTUnavailable):
        data.load_mnist(tmp_path / "data")
    assert not (tmp_path / "data").exists()


WRONG_FILES = {
    "labels above 9": (
        "train-labels-idx1-ubyte",
        lambda: torch.full((120,), 12, dtype=torch.uint8),
        "train-labels-idx1-ubyte holds labels from 12 to 12; MNIST's are 0 to 9",
    ),
    "32x32 images": (
        "t10k-images-idx3-ubyte",
        lambda: torch.zeros(40, 32, 32, dtype=torch.uint8),
        "t10k-images-idx3-ubyte holds 32x32 images; MNIST's are 28x28",
    ),
    "600 training images": (
        "train-images-idx3-ubyte",
        lambda: torch.zeros(600, 28, 28, dtype=torch.uint8),
        "train-images-idx3-ubyte holds 600 images; MNIST's has 120",
    ),
}


def test_well_formed_but_wrong_files_are_named(small_mnist, offline):
    data_dir, raw = small_mnist
    for case, (name, content, said) in WRONG_FILES.items():
        good = (raw / name).read_bytes()
        mnist._write_idx(raw / name, content())
        with pytest.raises(mnist.MNISTUnavailable) as caught:
            data.load_mnist(data_dir)
        assert said in str(caught.value) and "downloaded" not in str(caught.value), case
        (raw / name).write_bytes(good)


def test_garbage_in_place_of_a_file_is_named_and_nothing_claims_a_download(small_mnist, offline):
    data_dir, raw = small_mnist
    (raw / "t10k-labels-idx1-ubyte").write_bytes(b"not an MNIST file at all")
    with pytest.raises(mnist.MNISTUnavailable) as caught:
        data.load_mnist(data_dir)
    message = str(caught.value)
    assert "could not be read" in message and "downloaded" not in message
    assert "t10k-labels-idx1-ubyte is not an MNIST file" in message
