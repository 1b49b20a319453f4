"""The draw-a-digit page without a browser: the MNIST preparation, the model's answers, and the
server facing what a careless or hostile client sends."""

from __future__ import annotations

import http.client
import io
import json
import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from PIL import Image
from torch.nn import functional as F

from {{ cookiecutter.package_name }} import (
    data,
    draw,
)
from {{ cookiecutter.package_name }}.datasets import (
    handwriting,
)
from {{ cookiecutter.package_name }}.machinery import (
    checkpoints,
    devices,
    page_server,
)

SRC = Path(__file__).resolve().parents[1] / "src"
CANVAS = 280  # the page's canvas


def drawn_large(image: torch.Tensor, size: int, top: int, left: int) -> torch.Tensor:
    """A 28x28 digit (white on black) drawn ``size`` pixels tall at (``top``, ``left``) on a
    280x280 canvas, dark ink on white paper: as the page sends it."""
    big = F.interpolate(image.float().reshape(1, 1, 28, 28), size=(size, size), mode="bilinear")
    paper = torch.zeros(CANVAS, CANVAS)
    paper[top : top + size, left : left + size] = big[0, 0]
    return (255 - paper.clamp(0, 255)).round().to(torch.uint8)


def png(canvas: torch.Tensor) -> bytes:
    height, width = canvas.shape
    buffer = io.BytesIO()
    Image.frombytes("L", (width, height), bytes(canvas.flatten().tolist())).save(buffer, "PNG")
    return buffer.getvalue()


def ink_box(image: torch.Tensor) -> tuple[int, int]:
    rows = (image > 0).any(dim=1).nonzero()
    cols = (image > 0).any(dim=0).nonzero()
    return int(rows[-1] - rows[0] + 1), int(cols[-1] - cols[0] + 1)


def centre_of_mass(image: torch.Tensor) -> tuple[float, float]:
    ink = image.float()
    y = (ink.sum(dim=1) * torch.arange(28)).sum() / ink.sum()
    x = (ink.sum(dim=0) * torch.arange(28)).sum() / ink.sum()
    return float(y), float(x)


# ---------------------------------------------------------------------------- preparation


def test_a_tall_digit_in_a_corner_is_scaled_into_20x20_and_centred_by_its_mass():
    canvas = torch.full((CANVAS, CANVAS), 255, dtype=torch.uint8)
    canvas[10:190, 200:260] = 0  # a tall dark bar near the top right corner: a "1"

    prepared = handwriting.prepare_like_mnist(canvas)

    assert prepared.shape == (28, 28) and prepared.dtype == torch.uint8
    height, width = ink_box(prepared)
    assert height == 20 and 6 <= width <= 8  # the longer side is 20, the aspect ratio kept
    y, x = centre_of_mass(prepared)
    assert abs(y - 13.5) <= 0.5 and abs(x - 13.5) <= 0.5
    assert prepared.max() == 255 and prepared[0, 0] == 0  # white ink on black


def test_without_preparation_the_same_digit_stays_small_and_off_centre():
    canvas = torch.full((CANVAS, CANVAS), 255, dtype=torch.uint8)
    canvas[10:150, 200:260] = 0  # 140 px tall

    shrunk = handwriting.shrink_as_drawn(canvas)

    height, _ = ink_box(shrunk)
    _, x = centre_of_mass(shrunk)
    assert height <= 16 and x > 20  # as drawn: about 14 px tall, and far right


def test_an_empty_canvas_is_an_empty_image_and_no_prediction():
    canvas = torch.full((CANVAS, CANVAS), 255, dtype=torch.uint8)
    assert not handwriting.has_ink(canvas)
    assert handwriting.prepare_like_mnist(canvas).max() == 0


def test_a_digit_larger_than_the_box_on_one_side_still_fits(tiny_dataset):
    canvas = drawn_large(tiny_dataset.test.images[0], 270, 5, 5)
    height, width = ink_box(handwriting.prepare_like_mnist(canvas))
    assert max(height, width) <= 21


@pytest.fixture(scope="module")
def reader(trained_run) -> draw.Reader:
    cpu = devices.discover(probes=[devices.probe_cpu])
    loaded, _ = draw.load_reader(trained_run / "best.pt", "cpu", discovery=cpu)
    return loaded


@pytest.mark.slow
def test_test_digits_drawn_large_and_off_centre_are_read_back_only_when_prepared(
    reader, tiny_dataset
):
    """Held-out digits drawn 120 to 220 px tall anywhere on the canvas: prepared like MNIST
    the model reads them about as well as the originals; the canvas merely shrunk, it cannot."""
    generator = torch.Generator().manual_seed(7)
    count, prepared_right, as_drawn_right = 100, 0, 0
    for index in range(count):
        size = int(torch.randint(120, 221, (1,), generator=generator))
        top, left = (int(v) for v in torch.randint(0, CANVAS - size + 1, (2,), generator=generator))
        answer = reader.read(drawn_large(tiny_dataset.test.images[index], size, top, left))
        label = int(tiny_dataset.test.labels[index])
        prepared_right += answer["prepared"]["digit"] == label
        as_drawn_right += answer["as_drawn"]["digit"] == label

    # "About as well as the originals", measured: the tiny run's model misses some of the
    # (deliberately hard) synthetic test digits themselves, at 28x28.
    originals = reader.probabilities(tiny_dataset.test.images[:count]).argmax(dim=1)
    originals_right = int((originals == tiny_dataset.test.labels[:count]).sum())
    assert prepared_right >= originals_right - 0.1 * count, (prepared_right, originals_right)
    assert as_drawn_right <= prepared_right - 0.3 * count


# ---------------------------------------------------------------------------- the server


@pytest.fixture(scope="module")
def server(reader):
    running = draw.make_server(reader)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield running
    running.shutdown()
    running.server_close()


def request(server, method, path="/", body=None, headers=None, host=None):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", host if host is not None else f"127.0.0.1:{server.port}")
        for name, value in (headers or {}).items():
            connection.putheader(name, value)
        connection.endheaders(body)
        reply = connection.getresponse()
        return reply.status, reply.getheader("Content-Type") or "", reply.read()
    finally:
        connection.close()


def predict(server, body: bytes, **headers):
    headers = {"Content-Type": "image/png", "Content-Length": str(len(body)), **headers}
    status, _, text = request(server, "POST", "/predict", body, headers)
    return status, json.loads(text)


def test_the_page_is_served_whole_with_nothing_from_elsewhere(server):
    status, content_type, page = request(server, "GET", "/")
    text = page.decode("utf-8")

    assert status == 200 and content_type.startswith("text/html")
    assert server.url.startswith("http://127.0.0.1:")
    for part in ('id="pad"', 'id="clear"', 'id="prepare"', 'id="bars"', 'id="input28"'):
        assert part in text
    assert "http://" not in text and "https://" not in text and "//cdn" not in text


def read_as_mnist(reader, images: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return reader.model(data.to_model_input(images, reader.device.device)).argmax(dim=1)


def test_a_drawn_test_digit_is_read_with_probabilities_and_the_image_the_model_saw(
    server, reader, tiny_dataset
):
    images, labels = tiny_dataset.test.images[:20], tiny_dataset.test.labels[:20]
    known = int((read_as_mnist(reader, images) == labels).nonzero()[0])  # read right as it is
    canvas = drawn_large(images[known], 180, 80, 20)

    status, answer = predict(server, png(canvas))

    assert status == 200 and answer["empty"] is False and answer["device"].startswith("cpu")
    prepared = answer["prepared"]
    assert prepared["digit"] == int(labels[known])
    assert sum(prepared["probabilities"]) == pytest.approx(1.0, abs=0.01)
    assert len(prepared["image"]) == 784 and max(prepared["image"]) > 150  # white ink
    assert len(answer["as_drawn"]["probabilities"]) == 10 and answer["ms"] > 0


def test_another_host_name_is_refused_against_dns_rebinding(server):
    for host in ("attacker.example", f"attacker.example:{server.port}", ""):
        status, _, text = request(server, "GET", "/", host=host)
        assert status == 403, host
        assert f"only at {server.url}" in json.loads(text)["error"]


def test_a_post_from_another_origin_is_refused(server):
    status, answer = predict(server, b"\x89PNG", Origin="http://attacker.example")
    assert status == 403 and "attacker.example" in answer["error"]


def test_an_oversized_body_is_refused_before_it_is_read(server):
    headers = {"Content-Type": "image/png", "Content-Length": str(50 * 2**20)}
    status, _, text = request(server, "POST", "/predict", b"", headers)
    assert status == 413 and "at most" in json.loads(text)["error"]


def test_bad_images_get_a_4xx_with_a_message(server):
    blank = torch.full((CANVAS, CANVAS), 255, dtype=torch.uint8)
    huge = io.BytesIO()  # a few hundred bytes that would decode to 25 megapixels
    Image.new("L", (5000, 5000), 255).save(huge, "PNG")
    sent = [  # the body, its content type, and the answer's status and words
        (b"garbage, not an image", "image/png", 415, "PNG"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "image/png", 400, "cannot be read"),
        (png(blank)[:60], "image/png", 400, "cannot be read"),  # truncated
        (huge.getvalue(), "image/png", 413, "at most"),
        (png(blank), "text/plain", 415, "image/png"),
    ]
    for body, content_type, status, words in sent:
        answer_status, answer = predict(server, body, **{"Content-Type": content_type})

        assert answer_status == status and words in answer["error"], answer
        assert "Traceback" not in answer["error"]


def test_a_body_without_length_and_unknown_paths_are_refused(server):
    assert request(server, "POST", "/predict", None, {"Content-Type": "image/png"})[0] == 411
    assert request(server, "GET", "/secrets")[0] == 404
    assert request(server, "POST", "/elsewhere", b"", {"Content-Length": "0"})[0] == 404


def test_requests_at_once_share_the_model_and_get_the_same_answer(server, tiny_dataset):
    body = png(drawn_large(tiny_dataset.test.images[1], 200, 40, 40))

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda _: predict(server, body), range(16)))

    assert {status for status, _ in answers} == {200}
    assert len({json.dumps(answer["prepared"]) for _, answer in answers}) == 1


def test_an_empty_drawing_gets_no_prediction(server):
    status, answer = predict(server, png(torch.full((CANVAS, CANVAS), 255, dtype=torch.uint8)))
    assert status == 200 and answer["empty"] is True


# ---------------------------------------------------------------------------- the command


@pytest.mark.slow
def test_without_a_trained_model_it_says_how_to_train_one(run_module, tmp_path, child_limit):
    result = run_module("draw", "--no-browser", cwd=tmp_path, timeout=child_limit)

    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "no trained model in runs" in result.stderr
    assert "--dataset synthetic" in result.stderr


def test_ctrl_c_stops_it_and_frees_the_port(trained_run, cpu_only, monkeypatch, capsys):
    started = {}

    def interrupted(self, poll_interval=0.5):
        started["server"] = self
        raise KeyboardInterrupt

    monkeypatch.setattr(page_server.PageServer, "serve_forever", interrupted)
    code = draw.main(
        ["--checkpoint", str(trained_run / "best.pt"), "--device", "cpu", "--no-browser"]
    )
    out = capsys.readouterr().out

    assert code == 0 and "Stopped." in out and "Device  : cpu" in out
    assert started["server"].socket.fileno() == -1  # closed: the port is free again


def ctrl_c_as_from_a_terminal() -> None:
    """Run in the child before it starts: Ctrl+C's default action. A test runner started as a
    background job of a script ignores SIGINT, and its children would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_the_command_serves_the_page_and_says_which_device_answers(trained_run, child_limit):
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    command = [sys.executable, "-m", f"{draw.__package__}.draw", "--device", "cpu", "--no-browser"]
    command += ["--checkpoint", str(trained_run / "best.pt")]
    child = subprocess.Popen(
        command,
        env=dict(os.environ, PYTHONPATH=path, PYTHONUNBUFFERED="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=None if sys.platform == "win32" else ctrl_c_as_from_a_terminal,
    )
    timer = threading.Timer(child_limit, child.kill)
    timer.start()
    try:
        lines = []
        for line in child.stdout:
            lines.append(line)
            if line.startswith("The page:"):
                break
        url = lines[-1].split()[2]
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/")
        assert connection.getresponse().status == 200
        connection.close()
        assert any(line.startswith("Device  : cpu") for line in lines), lines
        if sys.platform != "win32":  # a real Ctrl+C; Windows has no SIGINT for a child
            child.send_signal(signal.SIGINT)
            rest = child.stdout.read()
            code = child.wait()
            assert (code, "Stopped." in rest, "Traceback" in rest) == (0, True, False), rest
    finally:
        timer.cancel()
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()


@pytest.mark.skipif(
    sys.platform == "win32",
    reason="POSIX only: there a daemon thread alive at exit can abort Python; Windows ends it "
    "quietly, and Wine's shutdown() does not wake a blocked recv()",
)
def test_closing_the_server_ends_a_browsers_idle_connection():
    """A browser keeps its connection open between strokes. Closing the server (Ctrl+C) must
    end that connection's thread too: a thread still alive while Python exits can abort it."""
    server = page_server.PageServer({"/": (b"<p>page</p>", "text/html")}, {})
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    before = set(threading.enumerate())
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("GET", "/")
    assert connection.getresponse().read() == b"<p>page</p>"
    (handler,) = set(threading.enumerate()) - before  # the connection's thread, still waiting
    server.shutdown()
    server.server_close()
    handler.join(timeout=5)
    assert not handler.is_alive()
    connection.close()


def test_a_body_shorter_than_its_length_is_the_clients_fault(server, monkeypatch, capfd):
    import socket
    import time

    monkeypatch.setattr(page_server, "BODY_TIMEOUT_S", 0.5)
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as client:
        client.sendall(
            b"POST /predict HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: image/png\r\n"
            b"Content-Length: 1000\r\n\r\n\x89PNG" % server.port
        )  # and then nothing: the connection stays open
        reply = b""
        while chunk := client.recv(65536):  # until the server closes the connection
            reply += chunk
    reply = reply.decode("utf-8", "replace")
    assert reply.startswith("HTTP/1.1 408 ")
    assert "stopped arriving" in reply and time.monotonic() - started < 10
    assert "Traceback" not in capfd.readouterr().err


def test_many_large_drawings_at_once_are_refused_or_decoded_a_few_at_a_time(server, monkeypatch):
    """A picture larger than the page ever sends is refused from its header; those that are
    accepted are decoded at most DECODES_AT_ONCE at a time, whatever the number of requests."""
    import threading as threads_module

    big = io.BytesIO()
    Image.new("L", (2 * draw.MAX_SIDE, 300), 255).save(big, "PNG")
    status, answer = predict(server, big.getvalue())
    assert status == 413 and f"at most {draw.MAX_SIDE}x{draw.MAX_SIDE}" in answer["error"]

    busy, most = [0], [0]
    lock = threads_module.Lock()
    real_new = Image.new

    def counting_new(*args, **kwargs):  # the decode's first big allocation
        with lock:
            busy[0] += 1
            most[0] = max(most[0], busy[0])
        try:
            threads_module.Event().wait(0.02)
            return real_new(*args, **kwargs)
        finally:
            with lock:
                busy[0] -= 1

    monkeypatch.setattr(Image, "new", counting_new)
    body = png(torch.full((draw.MAX_SIDE, draw.MAX_SIDE), 255, dtype=torch.uint8))
    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(lambda _: predict(server, body)[0], range(20)))
    assert answers == [200] * 20
    assert most[0] <= draw.DECODES_AT_ONCE


def test_a_model_of_your_own_classes_answers_with_their_names(reader, capsys):
    state = checkpoints.Checkpoint(
        model={},
        config={"dataset": "folder:/photos/shapes"},
        data_split={"classes": ["circle", "cross", "\x1b[2Jsquare"]},
    )
    note = draw.trained_on_note(state)
    assert note == (
        "this model learned your own pictures, not digits: it answers circle, cross, "
        "\\x1b[2Jsquare. Draw one of those."
    )
    shapes = draw.Reader(reader.model, reader.device, draw.class_names(state))
    canvas = torch.full((CANVAS, CANVAS), 255, dtype=torch.uint8)
    canvas[100:180, 120:160] = 0  # a black box on white paper
    answer = shapes.read(canvas)
    assert answer["prepared"]["digit"] in range(10)
    assert answer["classes"] == ["circle", "cross", "\x1b[2Jsquare"]  # JSON: the page escapes
    digits = draw.Reader(reader.model, reader.device).read(canvas)
    assert digits["classes"] == [str(d) for d in range(10)]
    old = checkpoints.Checkpoint({}, {"dataset": "folder:/photos/shapes"})  # older: no classes
    assert "does not name their classes" in draw.trained_on_note(old)
