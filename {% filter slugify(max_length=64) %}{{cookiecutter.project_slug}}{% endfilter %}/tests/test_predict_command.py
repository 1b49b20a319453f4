"""``python -m <package>.predict digit.png``: the digit the trained model reads in a picture."""

from __future__ import annotations

import os
import struct
import warnings
import zlib

import pytest
import torch
from PIL import Image
from torch.nn import functional as F

from {{ cookiecutter.package_name }}.datasets import handwriting
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


def digit_pixels(tiny_dataset, scale=4) -> torch.Tensor:
    """A training digit at 112x112, dark ink on white, as uint8 (H, W)."""
    image = tiny_dataset.train.images[0, 0]
    big = F.interpolate(image[None, None].float(), scale_factor=scale, mode="bilinear")
    return 255 - big[0, 0].clamp(0, 255).to(torch.uint8)


def upright_reading(tiny_dataset, tmp_path) -> torch.Tensor:
    path = tmp_path / "upright.png"
    Image.fromarray(digit_pixels(tiny_dataset).numpy(), mode="L").save(path)
    return predict_command.read_picture(path)


def test_a_phone_photo_is_read_as_it_is_shown(tiny_dataset, tmp_path):
    """A phone stores a photo turned, with an EXIF tag that says how to show it (6: turn it a
    quarter clockwise): the digit is read upright, as every viewer shows it."""
    stored = Image.fromarray(digit_pixels(tiny_dataset).numpy(), mode="L").rotate(90, expand=True)
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation
    photo = tmp_path / "photo.png"
    stored.save(photo, exif=exif)
    assert torch.equal(predict_command.read_picture(photo), upright_reading(tiny_dataset, tmp_path))


def test_a_digit_on_grey_paper_is_read_like_one_on_white(tiny_dataset, tmp_path):
    """Grey paper (170) is paper, not ink: the digit is read as on white paper, and a blank
    grey page has no digit."""
    white = digit_pixels(tiny_dataset)
    grey = (white.float() * 170 / 255).round().to(torch.uint8)
    path = tmp_path / "grey.png"
    Image.fromarray(grey.numpy(), mode="L").save(path)
    read = predict_command.read_picture(path)
    assert (read.int() - upright_reading(tiny_dataset, tmp_path).int()).abs().max() <= 2
    blank = tmp_path / "blank.png"
    Image.new("L", (112, 112), 170).save(blank)
    assert not handwriting.has_ink(predict_command.read_picture(blank))


def test_a_digit_on_a_transparent_background_is_read_as_shown(tiny_dataset, tmp_path):
    """A digit drawn on a transparent background, white or black: its ink is what is drawn
    (the alpha channel), read like the same digit dark on white."""
    ink = 255 - digit_pixels(tiny_dataset)
    upright = upright_reading(tiny_dataset, tmp_path).int()
    for ink_colour in (255, 0):  # white ink, black ink
        colour = torch.full_like(ink, ink_colour)
        rgba = torch.stack([colour, colour, colour, ink], dim=-1)
        path = tmp_path / f"transparent-{ink_colour}.png"
        Image.fromarray(rgba.numpy(), mode="RGBA").save(path)
        read = predict_command.read_picture(path)
        assert (read.int() - upright).abs().max() <= 1, f"ink {ink_colour}"


def png_of_size(path, width, height):
    """A PNG's header that says width x height: the size is all a picture's reader sees first."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        checksum = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + checksum

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b""))
        + chunk(b"IEND", b"")
    )
    return path


def test_a_picture_too_large_says_so_without_a_warning(tmp_path):
    """100 and 400 million pixels (Pillow warns of the first and refuses the second): one
    sentence that says the picture is too large, never that it is damaged, and no warning."""
    for side in (10_000, 20_000):
        path = png_of_size(tmp_path / f"huge-{side}.png", side, side)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(predict_command.PictureError) as refused:
                predict_command.read_picture(path)
        assert caught == [], side
        message = str(refused.value)
        assert "is too large a picture" in message and "crop it" in message
        assert "damaged" not in message


def test_a_folder_is_called_a_folder(tmp_path):
    with pytest.raises(predict_command.PictureError, match="is a folder: name a picture in it"):
        predict_command.read_picture(tmp_path)


@pytest.mark.skipif(os.name == "nt", reason="Windows allows no control characters in names")
def test_file_names_are_printed_so_that_they_cannot_steer_the_terminal(
    capsys, cpu_only, trained_run, tiny_dataset, tmp_path
):
    """A file name may hold escape sequences (one that clears the screen, one that retitles
    the window): predict shows them escaped, in its answers and in its refusals."""
    name = "seven\x1b[2J\x1b]0;owned\x07.png"
    picture = save_picture(tmp_path / name, tiny_dataset.train.images[0, 0])
    code, out, err = read_digits(
        capsys, picture, tmp_path / f"missing{name}", "--output-dir", trained_run
    )
    assert code == 2
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert "seven\\x1b[2J\\x1b]0;owned\\x07.png: " in out
    assert "missingseven\\x1b[2J" in err
