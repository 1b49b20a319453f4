"""``python -m <package>.predict digit.png``: the digit the trained model reads in a picture."""

from __future__ import annotations

import pytest
import torch
from PIL import Image
from torch.nn import functional as F

from {{ cookiecutter.package_name }}.machinery import predict_command


def save_picture(path, image_28x28, dark_on_light=True, scale=4):
    """A digit as a student's picture: larger than 28x28, by default dark ink on white."""
    big = F.interpolate(image_28x28[None, None].float(), scale_factor=scale, mode="bilinear")
    pixels = big[0, 0].clamp(0, 255).to(torch.uint8)
    if dark_on_light:
        pixels = 255 - pixels
    Image.fromarray(pixels.numpy(), mode="L").save(path)
    return path


def read_digits(capsys, *args):
    code = predict_command.main([*map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_predict_prints_the_digit_in_each_picture(
    capsys, cpu_only, trained_run, tiny_dataset, tmp_path
):
    """Ten digits the model was trained on, drawn dark on white at 112x112: it reads most of
    them, and says which model read them."""
    images, labels = tiny_dataset.train.images[:10, 0], tiny_dataset.train.labels[:10]
    paths = [save_picture(tmp_path / f"digit{i}.png", image) for i, image in enumerate(images)]
    code, out, err = read_digits(capsys, *paths, "--output-dir", trained_run)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"model: {trained_run / 'best.pt'} on cpu")
    answers = {
        line.split(": ")[0]: line.split(": ")[1].split()[0]
        for line in lines
        if line.startswith(str(tmp_path))
    }
    right = sum(answers[str(path)] == str(int(label)) for path, label in zip(paths, labels))
    assert right >= 8, out


def test_a_light_digit_on_black_reads_as_the_same_digit(
    capsys, cpu_only, trained_run, tiny_dataset, tmp_path
):
    """An MNIST-style picture (white on black) is read like the same digit drawn dark on white."""
    image = tiny_dataset.train.images[0, 0]
    dark = save_picture(tmp_path / "dark.png", image, dark_on_light=True)
    light = save_picture(tmp_path / "light.png", image, dark_on_light=False)
    code, out, err = read_digits(capsys, dark, light, "--output-dir", trained_run)
    assert code == 0, err
    answers = [
        line.split(": ", 1)[1] for line in out.splitlines() if line.startswith(str(tmp_path))
    ]
    assert len(answers) == 2 and answers[0] == answers[1], out


def test_a_missing_or_damaged_picture_is_one_sentence_and_exit_2(
    capsys, cpu_only, trained_run, tmp_path
):
    damaged = tmp_path / "damaged.png"
    damaged.write_bytes(b"\x89PNG\r\n\x1a\n" + b"not really" * 10)
    code, out, err = read_digits(
        capsys, tmp_path / "nowhere.png", damaged, "--output-dir", trained_run
    )
    assert code == 2
    assert f"error: There is no picture at {tmp_path / 'nowhere.png'}." in err
    assert f"error: {damaged} cannot be read as a picture" in err
    assert "Traceback" not in err


def test_without_a_trained_model_it_says_to_train_first(capsys, cpu_only, tmp_path):
    picture = tmp_path / "digit.png"
    Image.new("L", (56, 56), 255).save(picture)
    code, _, err = read_digits(capsys, picture, "--output-dir", tmp_path / "runs")
    assert code == 2 and "There is no trained model in" in err


@pytest.mark.slow
def test_python_m_predict_reads_a_png(run_module, trained_run, tiny_dataset, tmp_path):
    """The command as the README gives it: ``python -m <package>.predict digit.png``."""
    picture = save_picture(tmp_path / "digit.png", tiny_dataset.train.images[0, 0])
    args = (str(picture), "--output-dir", str(trained_run), "--device", "cpu")
    done = run_module("predict", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{picture}: " in done.stdout
