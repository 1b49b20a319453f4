"""Where the digits come from: MNIST files through torchvision (``mnist``) and generated
handwriting-like digits for offline use and tests (``synthetic``).

Both hand back plain uint8 image and int64 label tensors on the CPU; ``data.py`` turns them into
the splits that training uses.
"""
