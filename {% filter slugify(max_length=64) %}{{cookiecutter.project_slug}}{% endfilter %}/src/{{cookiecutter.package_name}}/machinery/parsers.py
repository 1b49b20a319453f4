"""Each command's parser, standard library only, so that ``--help`` answers before the
command imports torch (``quick_help``); the command parses its arguments with the same one.
train's parser is built from train.py's settings, in ``train_command``."""

from __future__ import annotations

import argparse
from pathlib import Path

from .cli import (
    add_checkpoint_option,
    add_data_dir_option,
    add_device_option,
    add_output_dir_option,
    add_runtime_option,
    command_parser,
    whole_number,
)

PACKAGE = (__package__ or "<package>.").rpartition(".")[0]
ONNX_NAME = "model.onnx"  # what export writes beside a checkpoint unless told another name

EVAL_BATCH_SIZE = 1000  # images evaluated at once (train's validation, evaluate)
EVAL_MAX_BATCH_SIZE = 100_000  # more than the MNIST test set: one batch

BENCHMARK_BATCHES = 200
BENCHMARK_WARMUP = 10
BENCHMARK_MAX_BATCHES = 1_000_000  # hours on a CPU already
BENCHMARK_MAX_BATCH_SIZE = 16_384  # LeNet's activations for such a batch take about 400 MB


def evaluate() -> argparse.ArgumentParser:
    parser = command_parser(
        f"{PACKAGE}.evaluate",
        "Test accuracy, per-class accuracy and a confusion matrix of a checkpoint.",
    )
    add_output_dir_option(parser)
    add_checkpoint_option(parser)
    parser.add_argument(
        "--onnx",
        type=Path,
        default=None,
        metavar="MODEL",
        help=f"an exported model (python -m {PACKAGE}.export) to run with ONNX Runtime instead "
        "of a checkpoint",
    )
    add_device_option(parser, "evaluate on", "with --onnx: auto or cpu")
    add_data_dir_option(parser, default=None)
    parser.add_argument(
        "--batch-size",
        type=whole_number(1, EVAL_MAX_BATCH_SIZE),
        default=EVAL_BATCH_SIZE,
        help="images evaluated at once: more is faster and needs more memory, the accuracy is "
        f"the same (at most {EVAL_MAX_BATCH_SIZE:,})",
    )
    return parser


def export() -> argparse.ArgumentParser:
    parser = command_parser(
        f"{PACKAGE}.export",
        "Export a checkpoint to ONNX and check it with ONNX Runtime on the CPU.",
    )
    add_output_dir_option(parser)
    add_checkpoint_option(parser)
    parser.add_argument(
        "--output", type=Path, default=None, help=f"the ONNX file (default: {ONNX_NAME} beside it)"
    )
    add_data_dir_option(parser, default=None)
    parser.add_argument(
        "--check-images",
        type=whole_number(1, 1_000_000),
        default=None,
        help="compare on the first N test images (default: all of them)",
    )
    return parser


def draw() -> argparse.ArgumentParser:
    parser = command_parser(
        f"{PACKAGE}.draw",
        "A page on this computer where you draw a digit and your model reads it.",
    )
    add_output_dir_option(parser)
    add_checkpoint_option(parser)
    add_device_option(parser, "run the model on", "used with --runtime torch")
    add_runtime_option(parser)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument(
        "--no-browser", action="store_true", help="print the address, do not open a browser"
    )
    return parser


def predict() -> argparse.ArgumentParser:
    parser = command_parser(
        f"{PACKAGE}.predict",
        "Print the digit your trained model reads in each picture (PNG): dark ink on light "
        "paper or a light digit on black, any size; it is prepared like MNIST's digits.",
    )
    parser.add_argument("pictures", nargs="+", type=Path, metavar="PICTURE", help="a PNG file")
    add_output_dir_option(parser)
    add_checkpoint_option(parser)
    add_device_option(parser, "run the model on", "used with --runtime torch")
    add_runtime_option(parser)
    return parser


def benchmark() -> argparse.ArgumentParser:
    parser = command_parser(
        f"{PACKAGE}.benchmark",
        "Time one training epoch of LeNet-5 (synthetic digits) on each device.",
    )
    parser.add_argument(
        "--batches",
        type=whole_number(1, BENCHMARK_MAX_BATCHES),
        default=BENCHMARK_BATCHES,
        help=f"batches per epoch (at most {BENCHMARK_MAX_BATCHES:,})",
    )
    parser.add_argument(
        "--batch-size",
        type=whole_number(1, BENCHMARK_MAX_BATCH_SIZE),
        default=128,
        help=f"images per training step (at most {BENCHMARK_MAX_BATCH_SIZE:,})",
    )
    parser.add_argument(
        "--warmup",
        type=whole_number(1, BENCHMARK_MAX_BATCHES),
        default=BENCHMARK_WARMUP,
        help="untimed batches first",
    )
    add_device_option(parser, "time", several=True)
    return parser


def data() -> argparse.ArgumentParser:
    parser = command_parser(
        f"{PACKAGE}.data",
        "Download MNIST into the data directory (run once while online), so that training "
        "works offline later.",
    )
    add_data_dir_option(parser)
    return parser
