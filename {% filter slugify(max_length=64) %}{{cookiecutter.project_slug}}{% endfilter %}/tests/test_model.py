"""LeNet-5: shapes, size, and that every layer learns."""

from __future__ import annotations

import torch
from torch.nn import functional as F

from {{ cookiecutter.package_name }} import (
    data,
)
from {{ cookiecutter.package_name }}.model import (
    LeNet5,
    count_parameters,
)


def test_maps_a_batch_of_digits_to_ten_logits():
    model = LeNet5()
    for batch in (1, 7, 128):
        logits = model(torch.zeros(batch, 1, 28, 28))
        assert logits.shape == (batch, 10)
        assert logits.dtype == torch.float32


def test_has_the_size_of_lenet5():
    # conv 1->6 5x5, conv 6->16 5x5, fc 400->120->84->10, with biases
    assert count_parameters(LeNet5()) == 61_706


def test_every_parameter_receives_a_gradient():
    torch.manual_seed(0)
    model = LeNet5()
    split = data.synthetic_digits(16, seed=5)
    loss = F.cross_entropy(
        model(data.to_model_input(split.images, torch.device("cpu"))), split.labels
    )
    loss.backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_pooling_before_relu_computes_the_classic_conv_relu_pool():
    """The model pools before its ReLU (cheaper); outputs and gradients must be those of the
    textbook order conv -> ReLU -> pool."""
    torch.manual_seed(1)
    model = LeNet5()
    x = data.to_model_input(data.synthetic_digits(32, seed=6).images, torch.device("cpu"))

    def classic(m, inputs):
        h = F.max_pool2d(F.relu(m.conv1(inputs)), 2)
        h = F.max_pool2d(F.relu(m.conv2(h)), 2)
        h = F.relu(m.fc1(torch.flatten(h, 1)))
        return m.fc3(F.relu(m.fc2(h)))

    ours, reference = model(x), classic(model, x)
    assert torch.allclose(ours, reference, atol=1e-6)
    ours.sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    reference.sum().backward()
    for grad, p in zip(grads, model.parameters()):
        assert torch.allclose(grad, p.grad, atol=1e-5)
